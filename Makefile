# webhook inbox — a plain Makefile (STYLE.md 14).
#   make            build/webhook.fcgi, build/webhook-drain
#   make demo       lighttpd on 127.0.0.1, a signed webhook stored and drained
#   make test       every test, plain and under ASan+UBSan; ends "N passed, N failed, N skipped"
#   make bench      benchmarks (bench/RESULTS.md)
#   make install    PREFIX=/usr/local DESTDIR=

PREFIX	?= /usr/local
DESTDIR	?=
CC	?= cc
PKGS	 = libfcgi sqlite3 libsodium libcjson inih
# libfcgi ships no .pc file on Debian 12; it is -lfcgi.
PKG_CFLAGS := $(shell pkg-config --cflags sqlite3 libsodium libcjson inih 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs sqlite3 libsodium libcjson inih 2>/dev/null) -lfcgi -lpthread
CURL_LIBS  := $(shell pkg-config --libs libcurl 2>/dev/null)
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null)

WARN	 = -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
	   -Wmissing-prototypes -Wpointer-arith -Wformat=2 -Wvla
CFLAGS	?= -O2 -g
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) $(PKG_CFLAGS) -I.

B	?= build
SAN_FLAGS = -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
	    -fno-sanitize-recover=undefined
# ThreadSanitizer, for the tests of what threads share (lib/committer.c).
TSAN_FLAGS = -O1 -g -fsanitize=thread -fno-omit-frame-pointer
TSAN_TESTS = test_committer

LIB_SRC	 = lib/util.c lib/instant.c lib/signature.c lib/event.c lib/config.c \
	   lib/inbox.c lib/handler.c lib/runlock.c lib/api.c \
	   lib/committer.c lib/walsync.c lib/version.c
LIB_OBJ	 = $(LIB_SRC:%.c=$(B)/%.o) $(B)/lib/schema.o
UNIT_TESTS = test_util test_instant test_signature test_event test_config \
	  test_inbox test_handler test_runlock test_walsync test_committer

.PHONY: all deps test test-all test-build san tsan bench demo clean install static FORCE
all: $(B)/webhook.fcgi $(B)/webhook-drain

# `--version`: VERSION from the tree, the commit from git (with -dirty when
# tracked files differ from it); outside a git checkout, "unknown".  The
# stamp changes only when they do, so lib/version.o is rebuilt only then.
VERSION	:= $(shell cat VERSION)
COMMIT	:= $(shell if git rev-parse --git-dir >/dev/null 2>&1; then \
	     c=$$(git rev-parse --short=12 HEAD); \
	     git diff --quiet HEAD -- 2>/dev/null || c=$$c-dirty; echo $$c; \
	     else echo unknown; fi)
VERSION_DEFS = -DWEBHOOK_VERSION='"$(VERSION)"' -DWEBHOOK_COMMIT='"$(COMMIT)"'

$(B)/version.stamp: FORCE
	@mkdir -p $(dir $@)
	@echo '$(VERSION) $(COMMIT)' | cmp -s - $@ || echo '$(VERSION) $(COMMIT)' >$@

$(B)/lib/version.o: lib/version.c lib/*.h $(B)/version.stamp
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(VERSION_DEFS) -c -o $@ $<

$(B)/%.o: %.c lib/*.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(B)/lib/schema.o: lib/schema.S schema.sql
	@mkdir -p $(dir $@)
	$(CC) -c -DSCHEMA_FILE='"schema.sql"' -o $@ lib/schema.S

$(B)/libwebhook.a: $(LIB_OBJ)
	rm -f $@
	ar rcs $@ $(LIB_OBJ)

$(B)/webhook.fcgi: $(B)/webhook.fcgi.o $(B)/libwebhook.a
	$(CC) $(CFLAGS) -o $@ $(B)/webhook.fcgi.o $(B)/libwebhook.a $(PKG_LIBS)

$(B)/webhook-drain: $(B)/webhook-drain.o $(B)/libwebhook.a
	$(CC) $(CFLAGS) -o $@ $(B)/webhook-drain.o $(B)/libwebhook.a $(PKG_LIBS) $(CURL_LIBS)

$(B)/tests/%: tests/%.c $(B)/libwebhook.a tests/*.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -DVECTORS='"$(VECTORS)"' \
	    -DSCHEMA_V1='"$(abspath tests/schema-v1.sql)"' \
	    -DCONF_EXAMPLE='"$(abspath conf/webhook.conf.example)"' -o $@ $< $(B)/libwebhook.a \
	    $(PKG_LIBS) $(CURL_LIBS) $(CHECK_LIBS)

# The Standard Webhooks vectors live in the tree (a copy of the project's
# shared vectors), so a clone alone builds every test.
VECTORS ?= $(abspath tests/vectors/standard-webhooks.json)

test-build: all $(UNIT_TESTS:%=$(B)/tests/%) $(B)/tests/webhook.fcgi.next

# The same receiver saying another version (VERSION+next): what the upgrade
# tests rename over a running one.  Only version.o differs; given as an
# object, it keeps the archive's version.o out of the link.
$(B)/tests/webhook.fcgi.next: $(B)/webhook.fcgi.o $(B)/libwebhook.a lib/version.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -DWEBHOOK_VERSION='"$(VERSION)+next"' \
	    -DWEBHOOK_COMMIT='"$(COMMIT)"' -c -o $(B)/tests/version-next.o lib/version.c
	$(CC) $(CFLAGS) -o $@ $(B)/webhook.fcgi.o $(B)/tests/version-next.o \
	    $(B)/libwebhook.a $(PKG_LIBS)

san:
	$(MAKE) B=build-san CFLAGS='$(SAN_FLAGS)' test-build

tsan:
	$(MAKE) B=build-tsan CFLAGS='$(TSAN_FLAGS)' all $(TSAN_TESTS:%=build-tsan/tests/%)

# `make test` and `make demo` first install what is missing (Debian 12),
# then run in a fresh make so pkg-config sees the new packages.
deps:
	scripts/install-deps

test: deps
	$(MAKE) test-all

test-all: test-build san tsan static
	tests/run

bench: deps
	$(MAKE) all static $(B)/bench/commit_cost $(B)/bench/cgiloop \
	    $(SB)/bench/cgi_ceiling
	bench/run
	python3 bench/cgi.py $(SB) $(B) --out $${BENCH_RESULTS:-bench/RESULTS.md}

# The plain-CGI row (bench/cgi.py): its client, and its ceiling, linked
# statically like the receiver it is compared with.
$(B)/bench/cgiloop: bench/cgiloop.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $<

$(SB)/bench/cgi_ceiling: bench/cgi_ceiling.c
	@mkdir -p $(dir $@)
	$(CC) -static $(ALL_CFLAGS) -o $@ $<

# The inbox's cost per stored row by batch size (bench/run runs it).
$(B)/bench/commit_cost: bench/commit_cost.c $(B)/libwebhook.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(B)/libwebhook.a $(PKG_LIBS)

demo: deps
	$(MAKE) all
	scripts/demo

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/webhook-inbox
	install -m 755 $(B)/webhook.fcgi $(B)/webhook-drain $(DESTDIR)$(PREFIX)/bin/
	install -m 644 conf/webhook.conf.example $(DESTDIR)$(PREFIX)/share/webhook-inbox/
	install -m 755 conf/handler.sh $(DESTDIR)$(PREFIX)/share/webhook-inbox/

# `make static`: build-static/webhook.fcgi, one fully static executable
# (`ldd`: "not a dynamic executable") for hosts whose glibc, SQLite or
# libsodium are too old or missing (CentOS 7's SQLite has no UPSERT).
# libfcgi, SQLite, libsodium and inih come from Debian's -dev packages
# (their .a files); Debian ships no static cJSON, so its source package is
# fetched at build time (`apt-get source cjson`, from the deb-src entry that
# scripts/install-deps adds) and cJSON.c compiled here.  Nothing third-party
# is committed.  glibc links statically for our code paths: the linker warns
# about dlopen (SQLite's load_extension, never enabled) and gethostbyname
# (libfcgi's FCGX_OpenSocket, never called: we take the socket on fd 0) --
# neither runs, so no NSS module or shared library is ever needed.
SB	 = build-static
SB_OBJ	 = $(LIB_SRC:%.c=$(SB)/%.o) $(SB)/lib/schema.o
SB_LIBS	 = -lfcgi -lsqlite3 -lsodium -linih -lm -lpthread

static: $(SB)/webhook.fcgi

$(SB)/cjson/src.stamp:
	rm -rf $(SB)/cjson
	mkdir -p $(SB)/cjson/src $(SB)/cjson/include/cjson
	cd $(SB)/cjson/src && { apt-get source -qq cjson || \
	    { apt-get update -qq && apt-get source -qq cjson; }; }
	cp $(SB)/cjson/src/cjson-*/cJSON.c $(SB)/cjson/
	cp $(SB)/cjson/src/cjson-*/cJSON.h $(SB)/cjson/include/cjson/
	touch $@

$(SB)/cjson/libcjson.a: $(SB)/cjson/src.stamp
	$(CC) $(CFLAGS) -std=c89 -I$(SB)/cjson/include/cjson -c -o $(SB)/cjson/cJSON.o \
	    $(SB)/cjson/cJSON.c
	rm -f $@
	ar rcs $@ $(SB)/cjson/cJSON.o

# The source package's cJSON.h first, ahead of the system's.
$(SB)/%.o: %.c lib/*.h $(SB)/cjson/libcjson.a
	@mkdir -p $(dir $@)
	$(CC) -I$(SB)/cjson/include $(ALL_CFLAGS) -c -o $@ $<

$(SB)/lib/version.o: lib/version.c lib/*.h $(B)/version.stamp $(SB)/cjson/libcjson.a
	@mkdir -p $(dir $@)
	$(CC) -I$(SB)/cjson/include $(ALL_CFLAGS) $(VERSION_DEFS) -c -o $@ $<

$(SB)/lib/schema.o: lib/schema.S schema.sql
	@mkdir -p $(dir $@)
	$(CC) -c -DSCHEMA_FILE='"schema.sql"' -o $@ lib/schema.S

$(SB)/libwebhook.a: $(SB_OBJ)
	rm -f $@
	ar rcs $@ $(SB_OBJ)

$(SB)/webhook.fcgi: $(SB)/webhook.fcgi.o $(SB)/libwebhook.a $(SB)/cjson/libcjson.a
	$(CC) -static $(CFLAGS) -o $@ $(SB)/webhook.fcgi.o $(SB)/libwebhook.a \
	    $(SB)/cjson/libcjson.a $(SB_LIBS)
	@if ldd $@ >/dev/null 2>&1; then echo "$@ is not static" >&2; rm -f $@; exit 1; fi

clean:
	rm -rf build build-san build-tsan build-static
