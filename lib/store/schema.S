/* schema.sql compiled into both binaries (docs/DESIGN.md "The shape"), with a
 * terminating NUL so it can be handed to sqlite3_exec; the same for
 * schema-pg.sql (the PostgreSQL inbox's) as schema_pg_sql, by
 * -DSCHEMA_SYM (Makefile). */
#ifndef SCHEMA_SYM
#define SCHEMA_SYM schema_sql
#endif
	.section .rodata
	.global SCHEMA_SYM
	.type SCHEMA_SYM, @object
SCHEMA_SYM:
	.incbin SCHEMA_FILE
	.byte 0
	.size SCHEMA_SYM, . - SCHEMA_SYM
	.section .note.GNU-stack, "", @progbits
