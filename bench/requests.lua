-- wrk script for bench/run: hand out pre-generated signed deliveries, each
-- exactly once.
--
-- BENCH_REQUESTS=PREFIX names the files bench/signed.py gen wrote:
-- PREFIX.0 .. PREFIX.(threads-1), each a run of "LENGTH\n" + raw request.
-- setup() numbers wrk's threads, so thread i loads only PREFIX.i (its own
-- slice: no id is ever sent twice, even across threads).  When a thread
-- has used up its slice it stops itself (wrk.thread:stop()) rather than
-- replay, and done() reports it: the run then ended early and bench/run
-- marks it invalid.
--
-- wrk 4.x calls thread 0's request() once before the run, from its main
-- thread, only to count the requests in the string (script_verify_request,
-- for pipelining): that string is never sent.  That first call gets a
-- plain GET instead of a delivery, so "sent" counts exactly the deliveries
-- written to a socket.  Should a wrk ever send it, webhook.fcgi answers
-- 405 and the run is marked invalid: a changed wrk shows, it cannot pass.

-- done() prints one machine-readable line for bench/run:
--   BENCH requests=… sent=… duration_us=… rps=… p50_us=… p99_us=… …
-- "requests" is wrk's count of completed responses, "sent" the number of
-- deliveries handed to wrk's connections, "non2xx" wrk's "Non-2xx or 3xx
-- responses" (status > 399), plus wrk's socket errors.

local threads = {}

function setup(thread)
	thread:set("tid", #threads)
	table.insert(threads, thread)
end

function init(args)
	local prefix = os.getenv("BENCH_REQUESTS")
	assert(prefix, "BENCH_REQUESTS is not set")
	local path = prefix .. "." .. tid
	local f = assert(io.open(path, "rb"))
	reqs = {}
	while true do
		local line = f:read("*l")
		if not line then break end
		local r = f:read(tonumber(line))
		reqs[#reqs + 1] = r
	end
	f:close()
	total = #reqs
	nexti = 1
	sent = 0
	exhausted = 0
	verify_call = (tid == 0)
	verify_request = wrk.format("GET", wrk.path)
	assert(total > 0, path .. " holds no requests")
end

function request()
	if verify_call then
		verify_call = false
		return verify_request
	end
	local r = reqs[nexti]
	if r == nil then
		-- Out of distinct deliveries: stop this thread.  wrk still needs
		-- a request for the connection that asked; the last one again is
		-- a duplicate (200, no new row) and is not counted as sent.
		if exhausted == 0 then
			exhausted = 1
			wrk.thread:stop()
		end
		return reqs[total]
	end
	nexti = nexti + 1
	sent = sent + 1
	return r
end

function done(summary, latency, requests)
	local sent, exhausted, loaded = 0, 0, 0
	for _, t in ipairs(threads) do
		sent = sent + t:get("sent")
		exhausted = exhausted + t:get("exhausted")
		loaded = loaded + t:get("total")
	end
	local e = summary.errors
	io.write(string.format(
	    "BENCH requests=%d sent=%d loaded=%d duration_us=%d rps=%.1f " ..
	    "p50_us=%d p90_us=%d p99_us=%d p999_us=%d max_us=%d non2xx=%d connect=%d " ..
	    "read=%d write=%d timeout=%d exhausted=%d\n",
	    summary.requests, sent, loaded, summary.duration,
	    summary.requests / (summary.duration / 1e6),
	    latency:percentile(50), latency:percentile(90),
	    latency:percentile(99), latency:percentile(99.9), latency.max,
	    e.status, e.connect, e.read,
	    e.write, e.timeout, exhausted))
end
