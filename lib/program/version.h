/*
 * version: what a binary says of itself (`--version`), so that an operator
 * can tell which build answers after an upgrade and what it was built with.
 *
 *   webhook.fcgi 0.9.0 (commit 1a2b3c4d5e6f)
 *   SQLite 3.40.1, libsodium 1.0.18, inbox schema 2
 *   inbox backends: sqlite
 *
 * The version comes from the tree's VERSION file and the commit from git
 * at build time (Makefile); a build outside a git checkout says "unknown".
 */
#ifndef WEBHOOK_VERSION_H
#define WEBHOOK_VERSION_H

#include <stdio.h>

/* "0.9.0" and "1a2b3c4d5e6f" (or "…-dirty", "unknown"): static strings. */
extern const char version_number[];
extern const char version_commit[];

/* Print the lines above for `progname` to f.  Callers add their own
 * lines after it (the drainer: libcurl and its TLS library). */
void	version_print(FILE *f, const char *progname);

#endif
