#!/bin/sh
# Test handler: records every hand-out as one line in $RECORD
#   id <TAB> attempt <TAB> type <TAB> object <TAB> object_id <TAB> created_at
#      <TAB> stale <TAB> sha256 of stdin <TAB> bytes
# and behaves as the body asks ("behave": "fail_always" | "fail_once" |
# "sleep" | "no_stdin" | "chatty"), so each test picks its failures.
body=$(mktemp)
case "$WEBHOOK_ID" in *no_stdin*) : ;; *) cat > "$body" ;; esac
sum=$(sha256sum < "$body" | cut -d' ' -f1)
bytes=$(wc -c < "$body")
printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$WEBHOOK_ID" "$WEBHOOK_ATTEMPT" \
    "$WEBHOOK_TYPE" "$WEBHOOK_OBJECT" "$WEBHOOK_OBJECT_ID" \
    "$WEBHOOK_CREATED_AT" "${WEBHOOK_STALE:-0}" "$sum" "$bytes" >> "$RECORD"
behave=$(grep -o '"behave": *"[a-z_]*"' "$body" | sed 's/.*"\([a-z_]*\)"$/\1/')
rm -f "$body"
case "$behave" in
fail_always)
	echo "boom on attempt $WEBHOOK_ATTEMPT"; exit 3 ;;
fail_once)
	if [ ! -e "$RECORD.failed.$WEBHOOK_ID" ]; then
		: > "$RECORD.failed.$WEBHOOK_ID"; echo "transient"; exit 4
	fi ;;
sleep)
	# A background child too: the timeout must take the whole group.
	(sleep 59.917; echo "orphan survived" >> "$RECORD.orphans") &
	sleep 59.917 ;;
sleep_short)
	sleep 3 ;;
sleep_once)
	# The first attempt as "sleep"; the next ones end at once.
	if [ "$WEBHOOK_ATTEMPT" = 1 ]; then
		(sleep 59.917; echo "orphan survived" >> "$RECORD.orphans") &
		sleep 59.917
	fi ;;
chatty)
	i=0; while [ $i -lt 3000 ]; do echo "line $i of noisy output"; i=$((i+1)); done
	echo "THE END" ;;
esac
exit 0
