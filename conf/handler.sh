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
# webhook ids are "msg_…"/"in_…"; refuse anything that could leave $out.
case "$WEBHOOK_ID" in */*|.*|"") echo "odd webhook id" >&2; exit 2 ;; esac
if [ -e "$out/$WEBHOOK_ID.json" ]; then
	echo "already handled $WEBHOOK_ID"
	exit 0
fi
tmp=$(mktemp "$out/.tmp.XXXXXX")
cat > "$tmp"
mv "$tmp" "$out/$WEBHOOK_ID.json"
echo "handled $WEBHOOK_ID (${WEBHOOK_TYPE:-no type}, object ${WEBHOOK_OBJECT:--} ${WEBHOOK_OBJECT_ID:--}, attempt $WEBHOOK_ATTEMPT)"
