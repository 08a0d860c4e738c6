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

-- wrk 4 "corrects" its latency histogram for coordinated omission before
-- done() sees it (wrk.c, stats_correct): with interval = duration ÷
-- (completed ÷ connections), the run's mean time per request and
-- connection, every latency L > 2 × interval also adds samples at
-- L − interval, L − 2 × interval, … while above interval — what an
-- open-loop client sending at that mean rate would have seen while the
-- server stalled.  A closed client (the provider, at most 5 deliveries in
-- flight) sees each delivery's own time.  raw_histogram() undoes the
-- correction exactly, from the top down (a bucket's added samples come
-- only from buckets above it in steps of interval), and returns the
-- measured latencies as a sorted list of {value µs, count} and their
-- number, or nil when BENCH_CONNECTIONS (wrk's -c) is not set.
local function raw_histogram(summary, latency)
	local conns = tonumber(os.getenv("BENCH_CONNECTIONS") or "")
	if not conns then return nil end
	local per_conn = math.floor(summary.requests / conns)
	local buckets = {}
	for i = 1, #latency do
		local v, c = latency(i)
		buckets[#buckets + 1] = {v, c}
	end
	if per_conn == 0 then return buckets end
	local interval = math.floor(summary.duration / per_conn)
	local added = {}
	local raw = {}
	for i = #buckets, 1, -1 do
		local v, c = buckets[i][1], buckets[i][2]
		local a = added[v] or 0
		local orig = c - a
		assert(orig >= 0, "latency histogram is not wrk 4's correction")
		if orig > 0 then raw[#raw + 1] = {v, orig} end
		local m = v - interval
		if m > interval and orig + a > 0 then
			added[m] = (added[m] or 0) + orig + a
		end
	end
	-- Collected from the top: ascending order for percentile().
	for i = 1, math.floor(#raw / 2) do
		raw[i], raw[#raw + 1 - i] = raw[#raw + 1 - i], raw[i]
	end
	return raw
end

-- p-th percentile of a sorted {value, count} list, by wrk's own rule
-- (stats.c, stats_percentile: the first value whose running count reaches
-- round(p/100 × n + 0.5)).
local function percentile(list, n, p)
	local rank = math.floor(p / 100 * n + 0.5 + 0.5)
	local total = 0
	for _, b in ipairs(list) do
		total = total + b[2]
		if total >= rank then return b[1] end
	end
	return list[#list] and list[#list][1] or 0
end

function done(summary, latency, requests)
	local sent, exhausted, loaded = 0, 0, 0
	for _, t in ipairs(threads) do
		sent = sent + t:get("sent")
		exhausted = exhausted + t:get("exhausted")
		loaded = loaded + t:get("total")
	end
	local e = summary.errors
	local raw = raw_histogram(summary, latency)
	local raw_n, raw_fields = 0, "raw_n=-1"
	if raw then
		for _, b in ipairs(raw) do raw_n = raw_n + b[2] end
		raw_fields = string.format(
		    "raw_n=%d raw_p50_us=%d raw_p90_us=%d raw_p99_us=%d raw_p999_us=%d raw_max_us=%d",
		    raw_n, percentile(raw, raw_n, 50), percentile(raw, raw_n, 90),
		    percentile(raw, raw_n, 99), percentile(raw, raw_n, 99.9),
		    raw[#raw] and raw[#raw][1] or 0)
	end
	io.write(string.format(
	    "BENCH requests=%d sent=%d loaded=%d duration_us=%d rps=%.1f " ..
	    "p50_us=%d p90_us=%d p99_us=%d p999_us=%d max_us=%d non2xx=%d connect=%d " ..
	    "read=%d write=%d timeout=%d exhausted=%d %s\n",
	    summary.requests, sent, loaded, summary.duration,
	    summary.requests / (summary.duration / 1e6),
	    latency:percentile(50), latency:percentile(90),
	    latency:percentile(99), latency:percentile(99.9), latency.max,
	    e.status, e.connect, e.read,
	    e.write, e.timeout, exhausted, raw_fields))
end
