#!/bin/sh
# A sample handler for webhook-drain, in shell.
#
# Delivery is at least once (a drainer killed mid-handler hands the event
# out again), so the handler keys its effect on WEBHOOK_ID: here, one file
# per event in $WEBHOOK_OUT (default ./events), written atomically; a
# second hand-out of the same id finds it and does nothing.
set -eu
out=${WEBHOOK_OUT:-./events}
mkdir -p "$out"
# The default source's ids are "msg_…"/"in_…", a [source NAME]'s
# "NAME/…" (docs/providers.md "Ids"): one file each, named by the id with
# '%' and '/' percent-encoded (two ids, two names); refuse anything that
# could leave $out.
case "$WEBHOOK_ID" in .*|*..*|"") echo "odd webhook id" >&2; exit 2 ;; esac
file=$out/$(printf '%s' "$WEBHOOK_ID" | sed 's/%/%25/g; s|/|%2F|g').json
if [ -e "$file" ]; then
	echo "already handled $WEBHOOK_ID"
	exit 0
fi
tmp=$(mktemp "$out/.tmp.XXXXXX")
cat > "$tmp"
mv "$tmp" "$file"
echo "handled $WEBHOOK_ID (${WEBHOOK_TYPE:-no type}, object ${WEBHOOK_OBJECT:--} ${WEBHOOK_OBJECT_ID:--}, attempt $WEBHOOK_ATTEMPT)"
