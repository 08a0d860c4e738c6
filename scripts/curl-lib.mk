# libcurl.a without libtool (Makefile, `make static`).  Read after curl's
# own lib/Makefile, as configure wrote it:
#
#   make -C build-static/curl/tree/lib -f Makefile -f curl-lib.mk OUT=…/libcurl.a OUT
#
# so that the sources (CSOURCES, from curl's lib/Makefile.inc) and every
# flag (DEFS, libcurl_la_CPPFLAGS, libcurl_la_CFLAGS, CFLAGS) are the ones
# curl's configure chose; only the compiler is called directly.  libtool's
# shell wrapper forks some thirty processes per source file: on this 2-core
# VM the library took 77 s through it and 20 s like this.

OUT	?= libcurl.a
STATIC_OBJS = $(CSOURCES:%.c=static/%.o)

static/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(DEFS) $(libcurl_la_CPPFLAGS) $(CPPFLAGS) $(libcurl_la_CFLAGS) \
	    $(CFLAGS) -c -o $@ $<

# configure rewrites curl_config.h only when what it found changed.
$(STATIC_OBJS): curl_config.h

$(OUT): $(STATIC_OBJS)
	rm -f $@
	ar rcs $@ $(STATIC_OBJS)
