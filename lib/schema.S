/* schema.sql compiled into both binaries (DESIGN.md "The shape"), with a
 * terminating NUL so it can be handed to sqlite3_exec. */
	.section .rodata
	.global schema_sql
	.type schema_sql, @object
schema_sql:
	.incbin SCHEMA_FILE
	.byte 0
	.size schema_sql, . - schema_sql
	.section .note.GNU-stack, "", @progbits
