# webhook inbox — a plain Makefile (STYLE.md 14).
#   make            build/webhook.fcgi, build/webhook-drain
#   make demo       lighttpd on 127.0.0.1, a signed webhook stored and drained
#   make test       every test, plain and under ASan+UBSan; ends "N passed, N failed, N skipped"
#   make static     build-static/webhook.fcgi, build-static/webhook-drain: fully static
#   make dist       build-static/dist/webhook-inbox-VERSION-linux-x86_64.tar.gz
#   make bench      benchmarks (bench/RESULTS.md)
#   make fuzz       the libFuzzer targets of fuzz/, FUZZ_SECONDS each
#   make install    PREFIX=/usr/local DESTDIR=  (make uninstall: the same files)
#   make deb        build/deb/webhook-inbox_VERSION_amd64.deb (debhelper)

PREFIX	?= /usr/local
DESTDIR	?=
CC	?= cc
PKGS	 = libfcgi sqlite3 libsodium libcjson inih nettle
# libfcgi ships no .pc file on Debian 12; it is -lfcgi.
PKG_CFLAGS := $(shell pkg-config --cflags sqlite3 libsodium libcjson inih nettle 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs sqlite3 libsodium libcjson inih nettle 2>/dev/null) -lfcgi -lpthread
CURL_LIBS  := $(shell pkg-config --libs libcurl 2>/dev/null)
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null)
# PostgreSQL (libpq) in the default build; the static build leaves it out
# (no -DWEBHOOK_POSTGRESQL: lib/store/postgresql/*.c compile to nothing there, and
# a postgresql:// database is a config error; docs/postgresql.md).
PG_CFLAGS  := -DWEBHOOK_POSTGRESQL $(shell pkg-config --cflags libpq 2>/dev/null)
PG_LIBS    := $(shell pkg-config --libs libpq 2>/dev/null)

WARN	 = -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
	   -Wmissing-prototypes -Wpointer-arith -Wformat=2 -Wvla
CFLAGS	?= -O2 -g
# CPPFLAGS and LDFLAGS are the builder's (the Debian package's hardening
# flags from dpkg-buildflags: _FORTIFY_SOURCE, relro, now); empty here.
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE $(WARN) $(CPPFLAGS) $(CFLAGS) $(PKG_CFLAGS) -I.

B	?= build
# Every header: an object depends on all of them (a plain Makefile).
LIB_H	:= $(wildcard lib/*/*.h lib/*/*/*.h)
SAN_FLAGS = -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
	    -fno-sanitize-recover=undefined
# ThreadSanitizer, for the tests of what threads share (lib/receive/committer.c).
TSAN_FLAGS = -O1 -g -fsanitize=thread -fno-omit-frame-pointer
TSAN_TESTS = test_committer

# lib/, one folder a part of the architecture (docs/DESIGN.md "Layout").
COMMON_SRC  = $(addprefix lib/common/,util.c utf8.c instant.c signature.c)
# One file per provider, the table and what they share (lib/scheme/scheme.h).
SCHEME_SRC  = $(addprefix lib/scheme/,scheme.c mac.c sample.c standard.c stripe.c \
	      github.c shopify.c woocommerce.c slack.c paddle.c discord.c gitlab.c \
	      twilio.c mercadopago.c hmac.c)
PROGRAM_SRC = $(addprefix lib/program/,config.c source.c keyname.c version.c)
RECEIVE_SRC = $(addprefix lib/receive/,request.c site.c \
	      receive.c committer.c upgrade.c)
STORE_SRC   = $(addprefix lib/store/,inbox.c tables.c event.c history.c) \
	      $(addprefix lib/store/sqlite/,engine.c rules.c ops.c history.c \
	      copy.c wal.c stamp.c walsync.c checkpointer.c) \
	      $(addprefix lib/store/postgresql/,engine.c statements.c rules.c \
	      ops.c history.c copy.c)
DRAIN_SRC   = $(addprefix lib/drain/,drain.c handler.c guard.c runlock.c \
	      refetch.c paging.c api.c ping.c)
OPERATOR_SRC = $(addprefix lib/operator/,present.c status.c digest.c bulk.c copy.c trial.c \
	      setup_check.c sender.c probe.c)
REPORT_SRC  = $(addprefix lib/report/,runrec.c report.c html.c prom.c)
LIB_SRC	 = $(COMMON_SRC) $(STORE_SRC) $(SCHEME_SRC) $(PROGRAM_SRC) $(RECEIVE_SRC) $(DRAIN_SRC) \
	   $(OPERATOR_SRC) $(REPORT_SRC)
LIB_OBJ	 = $(LIB_SRC:%.c=$(B)/%.o) $(B)/lib/store/schema.o $(B)/lib/store/schema_pg.o
UNIT_TESTS = test_util test_instant test_signature test_scheme test_scheme_sign test_event test_config \
	  test_source test_keyname \
	  test_inbox test_handler test_guard test_runlock test_walsync test_committer \
	  test_request test_site test_receive \
	  test_present test_refetch test_drain test_paging test_setup_check \
	  test_sender test_status test_digest test_history test_report_history test_copy \
	  test_inbox_pg test_store test_version test_bulk test_runrec test_report test_api \
	  test_ping test_trial test_upgrade test_probe

.PHONY: all deps test test-all storm test-build san tsan bench demo clean install \
	uninstall deb static \
	static-bins dist dist-tarball fuzz fuzz-build fuzz-smoke FORCE
all: $(B)/webhook.fcgi $(B)/webhook-drain

# `--version`: VERSION from the tree, the commit from git (with -dirty when
# tracked files differ from it); outside a git checkout, "unknown".  The
# stamp changes only when they do, so lib/program/version.o is rebuilt only then.
VERSION	:= $(shell cat VERSION)
COMMIT	:= $(shell if git rev-parse --git-dir >/dev/null 2>&1; then \
	     c=$$(git rev-parse --short=12 HEAD); \
	     git diff --quiet HEAD -- 2>/dev/null || c=$$c-dirty; echo $$c; \
	     else echo unknown; fi)
VERSION_DEFS = -DWEBHOOK_VERSION='"$(VERSION)"' -DWEBHOOK_COMMIT='"$(COMMIT)"'

$(B)/version.stamp: FORCE
	@mkdir -p $(dir $@)
	@echo '$(VERSION) $(COMMIT)' | cmp -s - $@ || echo '$(VERSION) $(COMMIT)' >$@

$(B)/lib/program/version.o: lib/program/version.c $(LIB_H) $(B)/version.stamp
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(PG_CFLAGS) $(VERSION_DEFS) -c -o $@ $<

$(B)/%.o: %.c $(LIB_H)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(PG_CFLAGS) -c -o $@ $<

$(B)/lib/store/schema.o: lib/store/schema.S schema.sql
	@mkdir -p $(dir $@)
	$(CC) -c -DSCHEMA_FILE='"schema.sql"' -o $@ lib/store/schema.S

# schema-pg.sql, the PostgreSQL inbox's (lib/store/postgresql/engine.c), as schema_pg_sql.
$(B)/lib/store/schema_pg.o: lib/store/schema.S schema-pg.sql
	@mkdir -p $(dir $@)
	$(CC) -c -DSCHEMA_FILE='"schema-pg.sql"' -DSCHEMA_SYM=schema_pg_sql -o $@ lib/store/schema.S

$(B)/libwebhook.a: $(LIB_OBJ)
	rm -f $@
	# q, not r: both engines have a rules.o, and r would keep only one.
	ar qcs $@ $(LIB_OBJ)

$(B)/webhook.fcgi: $(B)/webhook.fcgi.o $(B)/libwebhook.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(B)/webhook.fcgi.o $(B)/libwebhook.a $(PKG_LIBS) $(PG_LIBS)

$(B)/webhook-drain: $(B)/webhook-drain.o $(B)/libwebhook.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(B)/webhook-drain.o $(B)/libwebhook.a $(PKG_LIBS) $(CURL_LIBS) \
	    $(PG_LIBS)

# What only the tests link: the in-memory request (tests/fake_request.h),
# the HTTP server of the tests of what talks HTTP (tests/http_fixture.h).
# An archive, so a test takes it only when it uses it.
TEST_SRC = tests/fake_request.c tests/http_fixture.c
$(B)/libtestsupport.a: $(TEST_SRC:%.c=$(B)/%.o)
	rm -f $@
	ar rcs $@ $^
$(TEST_SRC:%.c=$(B)/%.o): tests/*.h

$(B)/tests/%: tests/%.c $(B)/libwebhook.a $(B)/libtestsupport.a tests/*.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(PG_CFLAGS) -DVECTORS='"$(VECTORS)"' \
	    -DPROVIDER_VECTORS='"$(PROVIDER_VECTORS)"' \
	    -DSCHEMA_V1='"$(abspath tests/schema-v1.sql)"' \
	    -DCONF_EXAMPLE='"$(abspath conf/webhook.conf.example)"' -o $@ $< \
	    $(B)/libtestsupport.a $(B)/libwebhook.a \
	    $(PKG_LIBS) $(CURL_LIBS) $(CHECK_LIBS) $(PG_LIBS)

# The Standard Webhooks vectors live in the tree (a copy of the project's
# shared vectors), so a clone alone builds every test.
VECTORS ?= $(abspath tests/vectors/standard-webhooks.json)
# Every provider's scheme, signed by its own SDK (tests/vectors/gen/).
PROVIDER_VECTORS ?= $(abspath tests/vectors/providers.json)

# The benchmarks' C programs too: one that no longer builds (a struct grew a
# field) fails make test, not only the next make bench.
test-build: all $(UNIT_TESTS:%=$(B)/tests/%) $(B)/tests/webhook.fcgi.next \
	    $(B)/bench/commit_cost $(B)/bench/history_cost $(B)/bench/cgiloop \
	    $(B)/bench/scheme_cost

# The same receiver saying another version (VERSION+next): what the upgrade
# tests rename over a running one.  Only version.o differs; given as an
# object, it keeps the archive's version.o out of the link.
$(B)/tests/webhook.fcgi.next: $(B)/webhook.fcgi.o $(B)/libwebhook.a lib/program/version.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -DWEBHOOK_VERSION='"$(VERSION)+next"' \
	    -DWEBHOOK_COMMIT='"$(COMMIT)"' -c -o $(B)/tests/version-next.o lib/program/version.c
	$(CC) $(CFLAGS) -o $@ $(B)/webhook.fcgi.o $(B)/tests/version-next.o \
	    $(B)/libwebhook.a $(PKG_LIBS) $(PG_LIBS)

san:
	$(MAKE) B=build-san CFLAGS='$(SAN_FLAGS)' test-build

tsan:
	$(MAKE) B=build-tsan CFLAGS='$(TSAN_FLAGS)' all $(TSAN_TESTS:%=build-tsan/tests/%)

# `make fuzz`: the libFuzzer targets fuzz/TARGET.c (the parsers of what
# arrives from outside: signature header and verifier, the providers'
# schemes, instants and
# numbers, event bodies, the config file, the whole request path), built with clang under
# ASan+UBSan in build/fuzz/, each run for FUZZ_SECONDS in turn on its
# working corpus build/fuzz/corpus/TARGET (fuzz/run says what it printed).
# `make fuzz-smoke`, which tests/run runs: each target's regression files
# (fuzz/regress/TARGET/), then FUZZ_SMOKE_SECONDS from its seeds.  Only
# the modules the targets use are built again, instrumented.
FUZZ_CC		 = clang
FUZZ_TARGETS	 = signature scheme instant_decimal event config request
FUZZ_SECONDS	?= 300
FUZZ_SMOKE_SECONDS ?= 15
FB		 = build/fuzz
FUZZ_CFLAGS	 = -std=c11 -D_GNU_SOURCE $(WARN) -O1 -g -fno-omit-frame-pointer \
		   -fsanitize=address,undefined -fno-sanitize-recover=undefined \
		   $(PKG_CFLAGS) -I.
FUZZ_LIBS	:= $(shell pkg-config --libs libsodium libcjson inih nettle 2>/dev/null)
FUZZ_LIB_OBJ	 = $(patsubst %.c,$(FB)/%.o,lib/common/util.c lib/common/instant.c \
		   lib/common/signature.c $(SCHEME_SRC) lib/store/event.c \
		   lib/program/config.c lib/program/source.c lib/program/keyname.c)
FUZZ_BINS	 = $(FUZZ_TARGETS:%=$(FB)/%)

$(FUZZ_LIB_OBJ): $(FB)/%.o: %.c $(LIB_H) fuzz/coverage-ignore.txt
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link \
	    -fsanitize-coverage-ignorelist=fuzz/coverage-ignore.txt -c -o $@ $<

$(filter-out $(FB)/request,$(FUZZ_BINS)): $(FB)/%: fuzz/%.c $(FUZZ_LIB_OBJ) $(LIB_H)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_LIB_OBJ) \
	    $(FUZZ_LIBS)

# The request path: the receiver's modules too, and SQLite and libfcgi.
FUZZ_REQ_OBJ	 = $(FUZZ_LIB_OBJ) $(patsubst %.c,$(FB)/%.o,lib/receive/request.c \
		   lib/receive/site.c lib/receive/receive.c lib/store/sqlite/engine.c lib/store/sqlite/rules.c \
		   lib/store/sqlite/ops.c lib/store/sqlite/wal.c lib/store/sqlite/stamp.c lib/store/sqlite/history.c lib/store/sqlite/copy.c lib/store/history.c \
		   lib/store/inbox.c lib/store/tables.c lib/receive/committer.c lib/store/sqlite/walsync.c \
		   lib/store/sqlite/checkpointer.c lib/program/version.c tests/fake_request.c) \
		   $(FB)/lib/store/schema.o
$(filter-out $(FUZZ_LIB_OBJ) $(FB)/lib/store/schema.o,$(FUZZ_REQ_OBJ)): $(FB)/%.o: %.c $(LIB_H) tests/fake_request.h \
    fuzz/coverage-ignore.txt
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link \
	    -fsanitize-coverage-ignorelist=fuzz/coverage-ignore.txt -c -o $@ $<
$(FB)/lib/store/schema.o: lib/store/schema.S schema.sql
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -c -DSCHEMA_FILE='"schema.sql"' -o $@ lib/store/schema.S
$(FB)/request: fuzz/request.c $(FUZZ_REQ_OBJ) $(LIB_H)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_REQ_OBJ) \
	    $(FUZZ_LIBS) $(shell pkg-config --libs sqlite3 2>/dev/null) -lfcgi -lpthread

fuzz-build: $(FUZZ_BINS)

fuzz: fuzz-build
	fuzz/run $(FB) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-smoke: fuzz-build
	@fuzz/run --smoke $(FB) $(FUZZ_SMOKE_SECONDS) $(FUZZ_TARGETS)

# `make test` and `make demo` first install what is missing (Debian 12),
# then run in a fresh make so pkg-config sees the new packages.
deps:
	scripts/install-deps

# -j2: the four builds (plain, sanitizers, static) are independent.
test: deps
	$(MAKE) -j2 test-all

# The static binaries, and the release tarball once its HOSTING.md exists
# (2 s more), for tests/e2e_hosting.py; WEBHOOK_STATIC_BUILT
# tells it that a missing one is a failure, not a reason to skip.  The
# Debian package (make deb, 36 s on an idle 2-core VM) for
# tests/e2e_vps.py, WEBHOOK_DEB_BUILT likewise.
test-all: test-build san tsan static-bins $(if $(wildcard docs/HOSTING.md),dist-tarball) deb
	WEBHOOK_STATIC_BUILT=1 WEBHOOK_DEB_BUILT=1 tests/run

# The storms (tests/e2e_storm.py on SQLite, tests/e2e_pgstorm.py on
# PostgreSQL) at full size, outside make test: their deliveries scaled up,
# and a fixed seed if STORM_SEED (PGSTORM_SEED) is given.
STORM_EVENTS ?= 6000
PGSTORM_EVENTS ?= 3000
storm: all
	STORM_EVENTS=$(STORM_EVENTS) PGSTORM_EVENTS=$(PGSTORM_EVENTS) tests/run storm

bench: deps
	$(MAKE) all static $(B)/bench/commit_cost $(B)/bench/history_cost \
	    $(B)/bench/cgiloop $(B)/bench/scheme_cost \
	    $(SB)/bench/cgi_ceiling $(SB)/bench/cgi_sqlite_floor
	@if command -v npm >/dev/null 2>&1; then \
		$(MAKE) bench/peer/node_modules/.package-lock.json; \
	else \
		echo "make bench: no npm: bench/run leaves the peer's rows out"; \
	fi
	bench/run
	python3 bench/cgi.py $(SB) $(B) --out $${BENCH_RESULTS:-bench/RESULTS.md}
	python3 bench/goals.py $${BENCH_GOALS:-$(B)/bench/goals.tsv} \
	    --out $${BENCH_RESULTS:-bench/RESULTS.md}

# bench/run's peer (bench/peer/, docs/receiver-throughput.md): its npm
# packages as package-lock.json pins them, installed again only when that
# changes (better-sqlite3 compiles SQLite: minutes).  make bench only;
# make test never needs Node.
bench/peer/node_modules/.package-lock.json: bench/peer/package-lock.json
	cd bench/peer && npm ci --no-audit --no-fund

# The plain-CGI row (bench/cgi.py): its client, and its ceiling, linked
# statically like the receiver it is compared with.
$(B)/bench/cgiloop: bench/cgiloop.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $<

# (Its rule sits below SB's definition: a target's name is expanded
# where make reads it.)

# The run's added cost of history per event (bench/report.py runs it).
$(B)/bench/history_cost: bench/history_cost.c $(B)/libwebhook.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(B)/libwebhook.a $(PKG_LIBS) $(CURL_LIBS) $(PG_LIBS)

# A delivery's check per scheme, CPU only (bench/schemes.py runs it).
$(B)/bench/scheme_cost: bench/scheme_cost.c $(B)/libwebhook.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(B)/libwebhook.a $(PKG_LIBS) $(PG_LIBS)

# The inbox's cost per stored row by batch size (bench/run runs it).
$(B)/bench/commit_cost: bench/commit_cost.c $(B)/libwebhook.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(B)/libwebhook.a $(PKG_LIBS) $(PG_LIBS)

demo: deps
	$(MAKE) all
	scripts/demo

# `make install`: the GNU conventions (PREFIX, DESTDIR; BINDIR... each
# overridable).  The receiver goes to sbin, as a daemon of section 8
# (webhook.fcgi(8)); the systemd units, the configuration snippets and the
# docs go where the package puts them (docs/vps.md).  The units name
# /usr/bin and /usr/sbin: installed elsewhere, they are rewritten to
# BINDIR and SBINDIR.  systemd reads /usr/local/lib/systemd/system too.
# Nothing is written to /etc, /var or /run: a config is the operator's
# (from DATADIR/webhook.conf.vps), and the state directories are the
# package's or the operator's to make (README, "VPS quickstart").
# `make uninstall` removes exactly these files, then the package's own
# directories if they are left empty.
BINDIR	?= $(PREFIX)/bin
SBINDIR	?= $(PREFIX)/sbin
DATADIR	?= $(PREFIX)/share/webhook-inbox
MANDIR	?= $(PREFIX)/share/man
DOCDIR	?= $(PREFIX)/share/doc/webhook-inbox
UNITDIR	?= $(PREFIX)/lib/systemd/system
MAN_PAGES  = man/webhook-drain.1 man/webhook.conf.5 man/webhook.fcgi.8
CONF_FILES = $(sort $(filter-out conf/systemd,$(wildcard conf/*)))
CONF_EXEC  = conf/handler.sh conf/webhook-spawn conf/webhook.fcgi-wrapper
UNITS	   = $(wildcard conf/systemd/*.service conf/systemd/*.socket \
	     conf/systemd/*.timer)
DOC_FILES  = README.md $(wildcard docs/*.md docs/*.json)
INSTALLED  = $(BINDIR)/webhook-drain $(SBINDIR)/webhook.fcgi \
	     $(foreach m,$(MAN_PAGES),$(MANDIR)/man$(subst .,,$(suffix $(m)))/$(notdir $(m))) \
	     $(CONF_FILES:conf/%=$(DATADIR)/%) $(UNITS:conf/systemd/%=$(UNITDIR)/%) \
	     $(DOC_FILES:%=$(DOCDIR)/%)

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(SBINDIR) $(DESTDIR)$(DATADIR) \
	    $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8 \
	    $(DESTDIR)$(DOCDIR)/docs $(DESTDIR)$(UNITDIR)
	install -m 755 $(B)/webhook-drain $(DESTDIR)$(BINDIR)/
	install -m 755 $(B)/webhook.fcgi $(DESTDIR)$(SBINDIR)/
	install -m 644 man/webhook-drain.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 644 man/webhook.conf.5 $(DESTDIR)$(MANDIR)/man5/
	install -m 644 man/webhook.fcgi.8 $(DESTDIR)$(MANDIR)/man8/
	install -m 644 $(filter-out $(CONF_EXEC),$(CONF_FILES)) $(DESTDIR)$(DATADIR)/
	install -m 755 $(CONF_EXEC) $(DESTDIR)$(DATADIR)/
	install -m 644 README.md $(DESTDIR)$(DOCDIR)/
	install -m 644 $(filter docs/%,$(DOC_FILES)) $(DESTDIR)$(DOCDIR)/docs/
	for u in $(UNITS); do \
	    sed -e 's|/usr/sbin/webhook\.fcgi|$(SBINDIR)/webhook.fcgi|g' \
		-e 's|/usr/bin/webhook-drain|$(BINDIR)/webhook-drain|g' $$u \
		>$(DESTDIR)$(UNITDIR)/$${u##*/} && \
	    chmod 644 $(DESTDIR)$(UNITDIR)/$${u##*/} || exit 1; \
	done

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	-rmdir $(DESTDIR)$(DOCDIR)/docs $(DESTDIR)$(DOCDIR) $(DESTDIR)$(DATADIR) 2>/dev/null

# `make deb`: the Debian package, build/deb/webhook-inbox_VERSION_amd64.deb
# (debian/: debhelper; lintian it with `lintian build/deb/*.deb`), built
# by dpkg-buildpackage from a copy of the tree's files (not its build
# directories) in build/deb/src, so that nothing of the tree is written;
# the commit is passed on, the copy having no .git.  Needs debhelper
# (scripts/install-deps).
DEB	 = $(B)/deb/webhook-inbox_$(VERSION)_$(shell dpkg --print-architecture 2>/dev/null || echo amd64).deb
deb:
	@test "$$(dpkg-parsechangelog -S Version)" = "$(VERSION)" || { \
	    echo "make deb: debian/changelog says $$(dpkg-parsechangelog -S Version)," \
	    "VERSION $(VERSION): add a changelog entry (dch -v $(VERSION))" >&2; exit 1; }
	rm -rf $(B)/deb
	mkdir -p $(B)/deb/src
	tar -cf - --exclude=./.git --exclude='./build*' --exclude=./demo . | \
	    tar -C $(B)/deb/src -xf -
	cd $(B)/deb/src && WEBHOOK_COMMIT=$(COMMIT) dpkg-buildpackage -us -uc -b \
	    >../build.log 2>&1 || { tail -40 ../build.log; exit 1; }
	@ls -l $(DEB)

# `make static`: build-static/webhook.fcgi and build-static/webhook-drain,
# two fully static executables (`ldd`: "not a dynamic executable") for
# hosts whose glibc, SQLite, libsodium or libcurl are too old or missing
# (CentOS 7's SQLite has no UPSERT; AlmaLinux and CloudLinux have no
# libcjson or libinih).  Everything comes from Debian: libfcgi, SQLite,
# libsodium, inih, OpenSSL (libssl.a, libcrypto.a), c-ares and zlib from
# their -dev packages; cJSON and libcurl, which Debian ships no static
# library of (libcurl's would drag in a dozen more), from their source
# packages, fetched at build time (`apt-get source`, from the deb-src entry
# that scripts/install-deps adds).  Nothing third-party is committed.
# build-static/LINKED.txt says what went into each binary, from the link
# itself.
#
# glibc links statically for our code paths, with no NSS module or shared
# library ever loaded; the linker warns about every function that would
# (naming only its first caller; SQLite's dlopen is the drainer's too):
#   dlopen             SQLite's load_extension (never enabled), OpenSSL's
#                      DSO loader (engines and providers from a config file:
#                      curl is built not to read one, below)
#   getaddrinfo,       OpenSSL's BIO_lookup_ex and BIO_gethostbyname, for
#   gethostbyname      its own BIO sockets (the openssl tool's): curl
#                      connects the socket itself and gives OpenSSL a BIO
#                      of its own over it (SSL_set_bio); libcurl built
#                      with c-ares calls neither (nm: no such reference)
#   gethostbyname      libfcgi's FCGX_OpenSocket (never called: we take the
#                      socket on fd 0; receiver only)
#   getservbyname,     c-ares, for a service given by name and in
#   getservbyport_r    ares_getnameinfo: curl passes the port as digits
#                      with ARES_AI_NUMERICSERV (lib/asyn-ares.c) and never
#                      calls ares_getnameinfo
# Names are resolved by c-ares, linked into libcurl: it reads /etc/hosts
# and /etc/resolv.conf itself, where glibc's static getaddrinfo would
# dlopen() the host's NSS modules (libnss_files.so...) of another glibc.
# tests/e2e_hosting.py runs both binaries in an empty root under strace:
# no shared object is ever opened.
SB	 = build-static

# The plain-CGI benchmark's ceiling (bench/cgi.py), static like the receiver.
$(SB)/bench/cgi_ceiling: bench/cgi_ceiling.c
	@mkdir -p $(dir $@)
	$(CC) -static $(ALL_CFLAGS) -o $@ $<

# Its second reference: SQLite's own least cost per CGI request.
$(SB)/bench/cgi_sqlite_floor: bench/cgi_sqlite_floor.c
	@mkdir -p $(dir $@)
	$(CC) -static $(ALL_CFLAGS) -o $@ $< -lsqlite3 -lm -lpthread
SB_OBJ	 = $(LIB_SRC:%.c=$(SB)/%.o) $(SB)/lib/store/schema.o $(SB)/lib/store/schema_pg.o
SB_LIBS	 = -lsqlite3 -lsodium -lnettle -linih -lm -lpthread
SB_CURL	 = $(SB)/curl/libcurl.a -lcares -lssl -lcrypto -lz
SB_BINS	 = $(SB)/webhook.fcgi $(SB)/webhook-drain

# Like `test`: install what is missing first (deb-src, libc-ares-dev...),
# so that a fresh Debian 12 needs no manual step and a user who cannot
# install is told what to do, not apt-get's "You must put some 'deb-src'
# URIs".  static-bins is the same without that step (test-all's).
static: deps
	$(MAKE) static-bins

static-bins: $(SB_BINS) $(SB)/LINKED.txt

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

# libcurl: Debian's source package (its security patches applied by
# `apt-get source`), as Debian's OpenSSL flavour (libcurl4): debian/rules
# builds that without the last two patches of the series, which rename
# the library for the GnuTLS and NSS flavours.  After cJSON's fetch, not
# beside it: two `apt-get update`s at once would fight over apt's lock.
$(SB)/curl/src.stamp: | $(SB)/cjson/src.stamp
	rm -rf $(SB)/curl
	mkdir -p $(SB)/curl/src
	cd $(SB)/curl/src && { apt-get source -qq curl >../source.log || \
	    { apt-get update -qq && apt-get source -qq curl >../source.log; }; }
	mv $(SB)/curl/src/curl-*/ $(SB)/curl/tree
	cd $(SB)/curl/tree && patch -R -s -p1 <debian/patches/99_nss.patch && \
	    patch -R -s -p1 <debian/patches/90_gnutls.patch
	touch $@

# Only what the drainer uses: HTTP and HTTPS (OpenSSL), gzip (the API
# answers, CURLOPT_ACCEPT_ENCODING), the proxy of $https_proxy (as the
# dynamic build honours it, with Basic credentials), Retry-After as a date
# (dateparse).  Off: every other protocol, and cookies, alt-svc, HSTS,
# netrc, DoH, MIME, NTLM and Digest (the API takes our bearer header),
# the curl tool's manual; no libpsl, brotli, zstd, idn2, nghttp2, ssh,
# rtmp, gssapi (the -dev packages of libcurl4-openssl-dev are installed
# here, so each is refused by name, not left to detection).  Not read:
# OpenSSL's config file (the host's openssl.cnf could ask for engines or
# providers, .so files the static OpenSSL would dlopen); no CA file or
# directory compiled in: lib/drain/api.c finds the host's bundle (api_ca_file,
# $SSL_CERT_FILE, then where each distribution keeps it), and with none
# found, verification fails.
CURL_CONFIGURE = --disable-shared --enable-static --disable-dependency-tracking \
	--with-openssl --with-zlib --enable-ares \
	--without-ca-bundle --without-ca-path --disable-openssl-auto-load-config \
	--disable-ftp --disable-file --disable-ldap --disable-ldaps \
	--disable-rtsp --disable-dict --disable-telnet --disable-tftp \
	--disable-pop3 --disable-imap --disable-smb --disable-smtp \
	--disable-gopher --disable-mqtt --disable-websockets \
	--disable-manual --disable-ntlm --disable-ntlm-wb --disable-crypto-auth \
	--disable-netrc --disable-cookies --disable-alt-svc --disable-hsts \
	--disable-doh --disable-mime --disable-tls-srp --disable-unix-sockets \
	--disable-libcurl-option --disable-get-easy-options \
	--disable-progress-meter --disable-headers-api --disable-dnsshuffle \
	--without-libpsl --without-brotli --without-zstd --without-libidn2 \
	--without-nghttp2 --without-ngtcp2 --without-nghttp3 --without-quiche \
	--without-msh3 --without-hyper --without-libssh2 --without-libssh \
	--without-librtmp --without-libgsasl \
	--without-zsh-functions-dir --without-fish-functions-dir

# configure's ~560 checks are most of libcurl's build time.  It would
# re-run itself under bash; dash (Debian's /bin/sh) forks faster, which
# took it from 131 s to 93 s here, with the same curl_config.h.  Its
# output is kept in configure.log, shown only when it fails.
$(SB)/curl/configure.stamp: $(SB)/curl/src.stamp
	cd $(SB)/curl/tree && CONFIG_SHELL=/bin/sh /bin/sh ./configure \
	    CC='$(CC)' $(CURL_CONFIGURE) \
	    >../configure.log 2>&1 || { tail -30 ../configure.log; exit 1; }
	touch $@

# The library alone (not the curl tool), without libtool
# (scripts/curl-lib.mk), on every core unless make already runs parallel.
$(SB)/curl/libcurl.a: $(SB)/curl/configure.stamp scripts/curl-lib.mk
	$(MAKE) -s -C $(SB)/curl/tree/lib \
	    $(if $(filter -j% --jobserver%,$(MAKEFLAGS)),,-j$(shell nproc)) \
	    -f Makefile -f $(abspath scripts/curl-lib.mk) \
	    OUT=$(abspath $@) $(abspath $@)

# The source packages' cJSON.h and curl/curl.h first, ahead of the
# system's.
SB_INC	 = -I$(SB)/cjson/include -I$(SB)/curl/tree/include

$(SB)/%.o: %.c $(LIB_H) $(SB)/cjson/libcjson.a
	@mkdir -p $(dir $@)
	$(CC) $(SB_INC) $(ALL_CFLAGS) -c -o $@ $<

# Every object that includes <curl/curl.h>: the source package's, first.
$(SB)/lib/drain/api.o $(SB)/lib/drain/refetch.o $(SB)/lib/drain/paging.o $(SB)/lib/operator/setup_check.o \
    $(SB)/lib/operator/sender.o $(SB)/lib/drain/ping.o $(SB)/lib/operator/probe.o $(SB)/webhook-drain.o: $(SB)/curl/libcurl.a

$(SB)/lib/program/version.o: lib/program/version.c $(LIB_H) $(B)/version.stamp $(SB)/cjson/libcjson.a
	@mkdir -p $(dir $@)
	$(CC) $(SB_INC) $(ALL_CFLAGS) $(VERSION_DEFS) -c -o $@ $<

$(SB)/lib/store/schema.o: lib/store/schema.S schema.sql
	@mkdir -p $(dir $@)
	$(CC) -c -DSCHEMA_FILE='"schema.sql"' -o $@ lib/store/schema.S

$(SB)/lib/store/schema_pg.o: lib/store/schema.S schema-pg.sql
	@mkdir -p $(dir $@)
	$(CC) -c -DSCHEMA_FILE='"schema-pg.sql"' -DSCHEMA_SYM=schema_pg_sql -o $@ lib/store/schema.S

$(SB)/libwebhook.a: $(SB_OBJ)
	rm -f $@
	ar qcs $@ $(SB_OBJ)

# Each link keeps, beside the binary, the archive members it took
# (ld -t -t: NAME.inputs) and its warnings (NAME.ld-warnings, also shown),
# for LINKED.txt; a binary that came out dynamic anyway is removed.
SB_LINK	 = $(CC) -static $(CFLAGS) -Wl,-t,-t -o $@
SB_CHECK = >$@.inputs 2>$@.ld-warnings; rc=$$?; cat $@.ld-warnings >&2; \
	   [ $$rc -eq 0 ] || exit $$rc; \
	   if ldd $@ >/dev/null 2>&1; then echo "$@ is not static" >&2; rm -f $@; exit 1; fi

$(SB)/webhook.fcgi: $(SB)/webhook.fcgi.o $(SB)/libwebhook.a $(SB)/cjson/libcjson.a
	$(SB_LINK) $(SB)/webhook.fcgi.o $(SB)/libwebhook.a \
	    $(SB)/cjson/libcjson.a -lfcgi $(SB_LIBS) $(SB_CHECK)

$(SB)/webhook-drain: $(SB)/webhook-drain.o $(SB)/libwebhook.a $(SB)/cjson/libcjson.a \
		$(SB)/curl/libcurl.a
	$(SB_LINK) $(SB)/webhook-drain.o $(SB)/libwebhook.a \
	    $(SB)/cjson/libcjson.a $(SB_CURL) $(SB_LIBS) $(SB_CHECK)

# What each binary links, with the Debian package and version of every
# archive, libcurl's features, the binaries' sizes and own --version.
$(SB)/LINKED.txt: $(SB_BINS) scripts/static-linked
	scripts/static-linked $(SB) $(SB_BINS) >$@.tmp
	mv $@.tmp $@
	@cat $@

# `make dist`: the static binaries as a release for shared hosting,
# build-static/dist/webhook-inbox-VERSION-linux-x86_64.tar.gz, one top
# directory webhook-inbox-VERSION/ with both binaries, conf/, README.md,
# docs/HOSTING.md (the guide an operator follows with the tarball, so
# none is made without it) and every document these two link, at its
# path in the repository (scripts/dist-docs: no link of the release
# leads out of it), VERSION and SHA256SUMS
# (`sha256sum -c SHA256SUMS` inside it); beside the tarball, its own sum
# as TARBALL.sha256 (what docs/HOSTING.md has the operator check) and in a
# SHA256SUMS (a release page's list).  Reproducible from one commit: names
# sorted, owner root, modes normalised, every mtime the commit's, gzip
# without a timestamp.
DIST_NAME = webhook-inbox-$(VERSION)
DIST_DIR  = $(SB)/dist
DIST_TGZ  = $(DIST_DIR)/$(DIST_NAME)-linux-x86_64.tar.gz
DIST_TIME = $(shell git log -1 --format=%ct 2>/dev/null || echo 0)

dist: deps
	$(MAKE) dist-tarball

dist-tarball: $(DIST_TGZ)

$(DIST_TGZ): $(SB_BINS) $(CONF_FILES) $(wildcard docs/* bench/*.md tests/*.md) \
	    README.md VERSION scripts/dist-docs
	@test -f docs/HOSTING.md || { echo "make dist: docs/HOSTING.md is" \
	    "missing: the tarball's guide to installing it on a" \
	    "host; write it (or merge it from main) first" >&2; exit 1; }
	rm -rf $(DIST_DIR)
	mkdir -p $(DIST_DIR)/$(DIST_NAME)/conf
	scripts/dist-docs README.md docs/HOSTING.md >$(SB)/dist-docs.list
	cp $(SB_BINS) VERSION $(DIST_DIR)/$(DIST_NAME)/
	cp $(CONF_FILES) $(DIST_DIR)/$(DIST_NAME)/conf/
	while read -r f; do mkdir -p "$(DIST_DIR)/$(DIST_NAME)/$$(dirname "$$f")" && \
	    cp "$$f" "$(DIST_DIR)/$(DIST_NAME)/$$f" || exit 1; done <$(SB)/dist-docs.list
	cd $(DIST_DIR)/$(DIST_NAME) && find . -type f ! -name SHA256SUMS | \
	    sed 's|^\./||' | LC_ALL=C sort | xargs sha256sum >SHA256SUMS
	tar -C $(DIST_DIR) --sort=name --owner=0 --group=0 --numeric-owner \
	    --mode=u+w,go-w,a+rX --mtime=@$(DIST_TIME) -cf - $(DIST_NAME) | \
	    gzip -9n >$@.tmp
	mv $@.tmp $@
	cd $(DIST_DIR) && sha256sum $(notdir $@) >$(notdir $@).sha256 && \
	    cp $(notdir $@).sha256 SHA256SUMS
	@ls -l $@

clean:
	rm -rf build build-san build-tsan build-static
