// Write tests/vectors/providers.json: signed deliveries for every scheme of
// lib/scheme/scheme.h, each signed (or, where the SDK only verifies, signed
// here with node:crypto and then verified) by the provider's own SDK from npm,
// at the versions package.json pins.  Every vector records which SDK made or
// checked it and the SDK's own verdict; the C test (tests/test_scheme.c)
// expects the same verdict.  Where no SDK exists (WooCommerce, GitLab), the
// vector cites the provider's documentation or source instead.
//
//   cd tests/vectors/gen && npm ci && node make-provider-vectors.mjs
//
// Deterministic: fixed secrets, ids and clocks, so running it again writes
// the same file (the committed one); a change in an SDK shows as a diff.

import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const here = path.dirname(fileURLToPath(import.meta.url));
const OUT = path.join(here, '..', 'providers.json');

// The installed version of an SDK, read from its package.json (some
// packages do not export that path, so it is read as a file).
const version = (name) => JSON.parse(fs.readFileSync(
    path.join(here, 'node_modules', name, 'package.json'), 'utf8')).version;
const pkg = (name) => `${name}@${version(name)}`;

// The clock every vector is verified at (2025-12-04T00:00:00Z).
const NOW = 1764806400;

// Run fn with Date (and Date.now) reading `sec` Unix seconds: the SDKs read
// the clock themselves, and a vector must not depend on when it was made.
async function atClock(sec, fn) {
	const Real = Date;
	class Fixed extends Real {
		constructor(...a) { if (a.length === 0) super(sec * 1000); else super(...a); }
		static now() { return sec * 1000; }
	}
	globalThis.Date = Fixed;
	try { return await fn(); } finally { globalThis.Date = Real; }
}

const vectors = [];
function add(v) {
	if (vectors.some((x) => x.name === v.name))
		throw new Error(`duplicate vector ${v.name}`);
	if (v.expected !== (v.sdk_verdict ?? v.expected))
		throw new Error(`${v.name}: expected ${v.expected}, SDK said ${v.sdk_verdict}`);
	vectors.push({ now: NOW, ...v });
}

const hmac = (alg, key, data, enc) =>
	crypto.createHmac(alg, key).update(data).digest(enc);

// ---------------------------------------------------------------- standard
{
	const { Webhook } = require('standardwebhooks');
	const svix = require('svix');
	const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
	const secret2 = 'whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD';
	const body = '{"type":"invoice.paid","timestamp":"2025-12-03T23:59:58Z","data":{"id":"in_1"}}';
	const id = 'msg_2pQ9VgN1yH0xA7';
	const ts = String(NOW - 2);
	const sig = new Webhook(secret).sign(id, new Date(Number(ts) * 1000), body);
	const sig2 = new svix.Webhook(secret2).sign(id, new Date(Number(ts) * 1000), body);
	const sdkStd = async (sec, h, b, now = NOW) => atClock(now, () => {
		try { new Webhook(sec).verify(b, h); return 'valid'; } catch { return 'invalid'; }
	});
	const sdkSvix = async (sec, h, b, now = NOW) => atClock(now, () => {
		try { new svix.Webhook(sec).verify(b, h); return 'valid'; } catch { return 'invalid'; }
	});
	const wh = { 'webhook-id': id, 'webhook-timestamp': ts, 'webhook-signature': sig };
	const sv = { 'svix-id': id, 'svix-timestamp': ts, 'svix-signature': sig };
	add({ scheme: 'standard', name: 'standard_valid', sdk: pkg('standardwebhooks'),
	    secrets: [secret], headers: wh, body, expected: 'valid', id,
	    sdk_verdict: await sdkStd(secret, wh, body) });
	add({ scheme: 'standard', name: 'standard_svix_headers', sdk: pkg('svix'),
	    secrets: [secret], headers: sv, body, expected: 'valid', id,
	    sdk_verdict: await sdkSvix(secret, sv, body),
	    reason: 'Svix sends the same scheme under svix-* header names.' });
	add({ scheme: 'standard', name: 'standard_wrong_secret', sdk: pkg('standardwebhooks'),
	    secrets: [secret2], headers: wh, body, expected: 'invalid', outcome: 'bad_signature',
	    sdk_verdict: await sdkStd(secret2, wh, body) });
	const tampered = body.replace('in_1', 'in_2');
	add({ scheme: 'standard', name: 'standard_tampered', sdk: pkg('standardwebhooks'),
	    secrets: [secret], headers: wh, body: tampered, expected: 'invalid', outcome: 'bad_signature',
	    sdk_verdict: await sdkStd(secret, wh, tampered) });
	add({ scheme: 'standard', name: 'standard_expired', sdk: pkg('standardwebhooks'),
	    secrets: [secret], headers: wh, body, now: NOW + 400, expected: 'invalid', outcome: 'stale',
	    sdk_verdict: await sdkStd(secret, wh, body, NOW + 400) });
	const rot = { ...sv, 'svix-signature': `${sig2} ${sig}` };
	add({ scheme: 'standard', name: 'standard_rotation_two_entries', sdk: pkg('svix'),
	    secrets: [secret2], headers: rot, body, expected: 'valid', id,
	    sdk_verdict: await sdkSvix(secret2, rot, body),
	    reason: 'During a rotation the sender signs with both secrets; the old one alone still verifies.' });
	add({ scheme: 'standard', name: 'standard_rotation_two_secrets', sdk: pkg('standardwebhooks'),
	    secrets: [secret2, secret], headers: wh, body, expected: 'valid', id, key_index: 1,
	    sdk_verdict: await sdkStd(secret, wh, body) });
}

// ------------------------------------------------------------------ stripe
{
	const Stripe = require('stripe');
	const stripe = new Stripe('sk_test_vectors_not_a_key');
	// Stripe keys its HMAC with the whole `whsec_…` string, not its base64.
	const secret = 'whsec_5f0c3d9a7be4e1c2b8a6d4f0e9c7a5b3';
	const secret2 = 'whsec_0123456789abcdef0123456789abcdef';
	const body = JSON.stringify({
		id: 'evt_1QvXyZ2eZvKYlo2C0a1b2c3d', object: 'event', api_version: '2024-06-20',
		created: NOW - 3, type: 'payment_intent.succeeded',
		data: { object: { id: 'pi_3QvXyZ2eZvKYlo2C1x2y3z4w', object: 'payment_intent', amount: 2000 } },
	}, null, 2);
	const t = NOW - 3;
	const header = stripe.webhooks.generateTestHeaderString({ payload: body, secret, timestamp: t });
	const sdk = (h, sec, b, now = NOW) => {
		try { stripe.webhooks.constructEvent(b, h, sec, 300, undefined, now * 1000); return 'valid'; }
		catch { return 'invalid'; }
	};
	const H = (h) => ({ 'Stripe-Signature': h });
	add({ scheme: 'stripe', name: 'stripe_valid', sdk: pkg('stripe'), secrets: [secret],
	    headers: H(header), body, expected: 'valid', id: 'evt_1QvXyZ2eZvKYlo2C0a1b2c3d',
	    sdk_verdict: sdk(header, secret, body) });
	add({ scheme: 'stripe', name: 'stripe_wrong_secret', sdk: pkg('stripe'), secrets: [secret2],
	    headers: H(header), body, expected: 'invalid', outcome: 'bad_signature',
	    sdk_verdict: sdk(header, secret2, body) });
	const tampered = body.replace('2000', '2001');
	add({ scheme: 'stripe', name: 'stripe_tampered', sdk: pkg('stripe'), secrets: [secret],
	    headers: H(header), body: tampered, expected: 'invalid', outcome: 'bad_signature',
	    sdk_verdict: sdk(header, secret, tampered) });
	add({ scheme: 'stripe', name: 'stripe_expired', sdk: pkg('stripe'), secrets: [secret],
	    headers: H(header), body, now: NOW + 600, expected: 'invalid', outcome: 'stale',
	    sdk_verdict: sdk(header, secret, body, NOW + 600) });
	// Rotation: Stripe sends one v1 per active secret, the newest first.
	const h2 = stripe.webhooks.generateTestHeaderString({ payload: body, secret: secret2, timestamp: t });
	const v1new = h2.split(',').find((p) => p.startsWith('v1=')).slice(3);
	const both = `${header},v1=${v1new}`;
	add({ scheme: 'stripe', name: 'stripe_rotation_second_v1', sdk: pkg('stripe'), secrets: [secret2],
	    headers: H(both), body, expected: 'valid', id: 'evt_1QvXyZ2eZvKYlo2C0a1b2c3d',
	    sdk_verdict: sdk(both, secret2, body) });
	add({ scheme: 'stripe', name: 'stripe_rotation_two_secrets', sdk: pkg('stripe'), secrets: [secret2, secret],
	    headers: H(header), body, expected: 'valid', key_index: 1, id: 'evt_1QvXyZ2eZvKYlo2C0a1b2c3d',
	    sdk_verdict: sdk(header, secret, body) });
	// The mistake the issue names: the whsec_ text taken as base64 gives a
	// different key; a signature made that way must not verify.
	const b64key = Buffer.from(secret.slice(6), 'base64');
	const wrong = `t=${t},v1=${hmac('sha256', b64key, `${t}.${body}`, 'hex')}`;
	add({ scheme: 'stripe', name: 'stripe_secret_not_base64', sdk: pkg('stripe'), secrets: [secret],
	    headers: H(wrong), body, expected: 'invalid', outcome: 'bad_signature',
	    sdk_verdict: sdk(wrong, secret, body),
	    reason: 'Signed with the base64 decoding of the text after whsec_: Stripe uses the whole string.' });
	const v0only = `t=${t},v0=${header.split('v1=')[1]}`;
	add({ scheme: 'stripe', name: 'stripe_v0_only', sdk: pkg('stripe'), secrets: [secret],
	    headers: H(v0only), body, expected: 'invalid', outcome: 'bad_signature',
	    sdk_verdict: sdk(v0only, secret, body), reason: 'Only v1 entries are checked.' });
}

// ------------------------------------------------------------------ github
{
	const { sign, verify } = await import('@octokit/webhooks-methods');
	// GitHub's own documentation's example secret and payload
	// (docs.github.com, "Validating webhook deliveries", "Testing the
	// webhook payload validation"): spaces and a quote, used as raw bytes.
	const secret = "It's a Secret to Everybody";
	const body = 'Hello, World!';
	const doc = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';
	const sdk = async (sec, b, s) => ((await verify(sec, b, s)) ? 'valid' : 'invalid');
	const H = (s) => ({ 'X-Hub-Signature-256': s, 'X-GitHub-Delivery': '72d3162e-cc78-11e3-81ab-4c9367dc0958', 'X-GitHub-Event': 'push' });
	const s1 = await sign(secret, body);
	if (s1 !== doc) throw new Error(`octokit sign ${s1} != GitHub's documented ${doc}`);
	add({ scheme: 'github', name: 'github_docs_example', sdk: pkg('@octokit/webhooks-methods'),
	    doc: 'https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries#testing-the-webhook-payload-validation',
	    secrets: [secret], headers: H(s1), body, expected: 'valid',
	    id: '72d3162e-cc78-11e3-81ab-4c9367dc0958', type: 'push',
	    sdk_verdict: await sdk(secret, body, s1) });
	const push = JSON.stringify({ ref: 'refs/heads/main', after: 'd6fde92930d4715a2b49857d24b940956b26d2d3', repository: { id: 1296269, full_name: 'octocat/Hello-World' } });
	const s2 = await sign(secret, push);
	add({ scheme: 'github', name: 'github_push', sdk: pkg('@octokit/webhooks-methods'),
	    secrets: [secret], headers: H(s2), body: push, expected: 'valid',
	    id: '72d3162e-cc78-11e3-81ab-4c9367dc0958', type: 'push', sdk_verdict: await sdk(secret, push, s2) });
	add({ scheme: 'github', name: 'github_wrong_secret', sdk: pkg('@octokit/webhooks-methods'),
	    secrets: ["It's a secret to everybody"], headers: H(s2), body: push, expected: 'invalid',
	    outcome: 'bad_signature', sdk_verdict: await sdk("It's a secret to everybody", push, s2) });
	const tampered = push.replace('main', 'mainx');
	add({ scheme: 'github', name: 'github_tampered', sdk: pkg('@octokit/webhooks-methods'),
	    secrets: [secret], headers: H(s2), body: tampered, expected: 'invalid', outcome: 'bad_signature',
	    sdk_verdict: await sdk(secret, tampered, s2) });
	const sha1 = { 'X-Hub-Signature': `sha1=${hmac('sha1', secret, push, 'hex')}`, 'X-GitHub-Delivery': 'x', 'X-GitHub-Event': 'push' };
	add({ scheme: 'github', name: 'github_sha1_only', sdk: pkg('@octokit/webhooks-methods'),
	    secrets: [secret], headers: sha1, body: push, expected: 'invalid', outcome: 'missing',
	    sdk_verdict: await sdk(secret, push, sha1['X-Hub-Signature']),
	    reason: 'The legacy SHA-1 X-Hub-Signature alone is refused, as the SDK refuses it.' });
	const utf = JSON.stringify({ comment: { body: 'Grüße, 世界 — ✓' } });
	const s3 = await sign('wh-geheimnis ✓', utf);
	add({ scheme: 'github', name: 'github_utf8_secret_and_body', sdk: pkg('@octokit/webhooks-methods'),
	    secrets: ['wh-geheimnis ✓'], headers: H(s3), body: utf, expected: 'valid',
	    id: '72d3162e-cc78-11e3-81ab-4c9367dc0958', type: 'push', sdk_verdict: await sdk('wh-geheimnis ✓', utf, s3) });
}

// ----------------------------------------------------------------- shopify
{
	await import('@shopify/shopify-api/adapters/web-api');
	const { shopifyApi, ApiVersion } = await import('@shopify/shopify-api');
	const secret = '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';
	const shopify = shopifyApi({
		apiKey: 'vectors', apiSecretKey: secret, scopes: [], hostName: 'localhost',
		apiVersion: ApiVersion.October25 ?? Object.values(ApiVersion).pop(),
		isEmbeddedApp: false, logger: { level: 0, log: () => {} },
	});
	const body = JSON.stringify({ id: 820982911946154500, admin_graphql_api_id: 'gid://shopify/Order/820982911946154508', updated_at: '2025-12-03T18:59:57-05:00', total_price: '403.00' });
	const mac = (sec, b) => hmac('sha256', sec, b, 'base64');
	const H = (m) => ({
		'X-Shopify-Hmac-Sha256': m, 'X-Shopify-Topic': 'orders/updated',
		'X-Shopify-Shop-Domain': 'vectors.myshopify.com', 'X-Shopify-API-Version': '2025-10',
		'X-Shopify-Webhook-Id': 'b54557e4-bdd9-4b37-8a5f-bf7d70bcd043',
		'X-Shopify-Triggered-At': '2025-12-03T23:59:57.123456789Z',
		'X-Shopify-Event-Id': '98880550-7158-44d4-b7cd-2c97c8a091b5',
	});
	const sdk = async (headers, b) => {
		const req = new Request('https://localhost/webhooks', { method: 'POST', headers, body: b });
		const r = await shopify.webhooks.validate({ rawBody: b, rawRequest: req });
		return r.valid ? 'valid' : 'invalid';
	};
	const m = mac(secret, body);
	add({ scheme: 'shopify', name: 'shopify_valid', sdk: pkg('@shopify/shopify-api'),
	    secrets: [secret], headers: H(m), body, expected: 'valid',
	    id: '98880550-7158-44d4-b7cd-2c97c8a091b5', type: 'orders/updated',
	    sdk_verdict: await sdk(H(m), body),
	    reason: 'Signed with node:crypto, verified by the SDK (it has no signer).' });
	const m2 = mac('shpss_other', body);
	add({ scheme: 'shopify', name: 'shopify_wrong_secret', sdk: pkg('@shopify/shopify-api'),
	    secrets: [secret], headers: H(m2), body, expected: 'invalid', outcome: 'bad_signature',
	    sdk_verdict: await sdk(H(m2), body) });
	const tampered = body.replace('403.00', '0.00');
	add({ scheme: 'shopify', name: 'shopify_tampered', sdk: pkg('@shopify/shopify-api'),
	    secrets: [secret], headers: H(m), body: tampered, expected: 'invalid', outcome: 'bad_signature',
	    sdk_verdict: await sdk(H(m), tampered) });
	add({ scheme: 'shopify', name: 'shopify_rotation_two_secrets', sdk: pkg('@shopify/shopify-api'),
	    secrets: ['shpss_other', secret], headers: H(m), body, expected: 'valid', key_index: 1,
	    id: '98880550-7158-44d4-b7cd-2c97c8a091b5', type: 'orders/updated',
	    sdk_verdict: await sdk(H(m), body) });
}

// ------------------------------------------------------------- woocommerce
{
	// No SDK signs or verifies WooCommerce webhooks.  WooCommerce's own
	// source: WC_Webhook::generate_signature() is
	// base64_encode(hash_hmac('sha256', $payload, wp_specialchars_decode($secret), true)),
	// sent as X-WC-Webhook-Signature.
	const doc = 'https://github.com/woocommerce/woocommerce/blob/trunk/plugins/woocommerce/includes/class-wc-webhook.php (generate_signature, deliver_ping)';
	const secret = 'x$N<D]7uLq3h)G5y^W@k';
	const body = JSON.stringify({ id: 727, status: 'processing', date_modified_gmt: '2025-12-03T23:59:50' });
	const m = hmac('sha256', secret, body, 'base64');
	const H = (s) => ({
		'X-WC-Webhook-Signature': s, 'X-WC-Webhook-Source': 'https://shop.example/',
		'X-WC-Webhook-Topic': 'order.updated', 'X-WC-Webhook-Resource': 'order',
		'X-WC-Webhook-Event': 'updated', 'X-WC-Webhook-ID': '12',
		'X-WC-Webhook-Delivery-ID': 'a1d4e9b8c7f6e5d4c3b2a1f0e9d8c7b6',
	});
	add({ scheme: 'woocommerce', name: 'woocommerce_valid', doc, secrets: [secret], headers: H(m), body,
	    expected: 'valid', id: 'a1d4e9b8c7f6e5d4c3b2a1f0e9d8c7b6', type: 'order.updated' });
	add({ scheme: 'woocommerce', name: 'woocommerce_tampered', doc, secrets: [secret], headers: H(m),
	    body: body.replace('727', '728'), expected: 'invalid', outcome: 'bad_signature' });
	add({ scheme: 'woocommerce', name: 'woocommerce_wrong_secret', doc, secrets: ['another'], headers: H(m),
	    body, expected: 'invalid', outcome: 'bad_signature' });
	// The ping WooCommerce sends when a webhook is created or its URL
	// changed: an unsigned form body "webhook_id=N"; anything but 2xx and
	// WooCommerce refuses to save the webhook.
	add({ scheme: 'woocommerce', name: 'woocommerce_creation_ping', doc, secrets: [secret],
	    headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: 'webhook_id=12',
	    expected: 'valid', outcome: 'ping' });
	add({ scheme: 'woocommerce', name: 'woocommerce_ping_not_a_number', doc, secrets: [secret],
	    headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: 'webhook_id=12&x=1',
	    expected: 'invalid', outcome: 'missing' });
}

// ------------------------------------------------------------------- slack
{
	const { isValidSlackRequest } = require('@slack/bolt');
	// Slack's documented example (api.slack.com/authentication/verifying-requests-from-slack):
	const docSecret = '8f742231b10e8888abcd99yyyzzz85a5';
	const docBody = 'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c';
	const docTs = '1531420618';
	const docSig = 'v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503';
	const sdk = (sec, ts, sig, b, now) => (isValidSlackRequest({
		signingSecret: sec, body: b, nowMilliseconds: now * 1000,
		headers: { 'x-slack-request-timestamp': Number(ts), 'x-slack-signature': sig },
	}) ? 'valid' : 'invalid');
	const H = (ts, sig) => ({ 'X-Slack-Request-Timestamp': ts, 'X-Slack-Signature': sig });
	add({ scheme: 'slack', name: 'slack_docs_example', sdk: pkg('@slack/bolt'),
	    doc: 'https://api.slack.com/authentication/verifying-requests-from-slack',
	    secrets: [docSecret], headers: H(docTs, docSig), body: docBody, now: Number(docTs) + 10,
	    expected: 'valid', sdk_verdict: sdk(docSecret, docTs, docSig, docBody, Number(docTs) + 10) });
	const secret = 'a3f0c9d8e7b6a5f4e3d2c1b0a9f8e7d6';
	const body = JSON.stringify({ token: 'x', team_id: 'T1', type: 'event_callback', event_id: 'Ev08MFMKH6', event_time: NOW - 1, event: { type: 'message', text: 'hi' } });
	const ts = String(NOW - 1);
	const sig = `v0=${hmac('sha256', secret, `v0:${ts}:${body}`, 'hex')}`;
	add({ scheme: 'slack', name: 'slack_event', sdk: pkg('@slack/bolt'), secrets: [secret],
	    headers: H(ts, sig), body, expected: 'valid', sdk_verdict: sdk(secret, ts, sig, body, NOW),
	    reason: 'Signed with node:crypto, verified by Bolt (it has no signer).' });
	add({ scheme: 'slack', name: 'slack_expired', sdk: pkg('@slack/bolt'), secrets: [secret],
	    headers: H(ts, sig), body, now: NOW + 400, expected: 'invalid', outcome: 'stale',
	    sdk_verdict: sdk(secret, ts, sig, body, NOW + 400) });
	add({ scheme: 'slack', name: 'slack_tampered', sdk: pkg('@slack/bolt'), secrets: [secret],
	    headers: H(ts, sig), body: body.replace('hi', 'ho'), expected: 'invalid', outcome: 'bad_signature',
	    sdk_verdict: sdk(secret, ts, sig, body.replace('hi', 'ho'), NOW) });
	const ts2 = String(NOW - 2);
	add({ scheme: 'slack', name: 'slack_timestamp_swapped', sdk: pkg('@slack/bolt'), secrets: [secret],
	    headers: H(ts2, sig), body, expected: 'invalid', outcome: 'bad_signature',
	    sdk_verdict: sdk(secret, ts2, sig, body, NOW) });
	// Slack's url_verification: answer with the challenge within 3 s.
	const uv = JSON.stringify({ token: 'Jhj5dZrVaK7ZwHHjRyZWjbDl', challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P', type: 'url_verification' });
	const uvsig = `v0=${hmac('sha256', secret, `v0:${ts}:${uv}`, 'hex')}`;
	add({ scheme: 'slack', name: 'slack_url_verification', sdk: pkg('@slack/bolt'), secrets: [secret],
	    headers: H(ts, uvsig), body: uv, expected: 'valid', outcome: 'answer',
	    answer: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P',
	    doc: 'https://api.slack.com/events/url_verification',
	    sdk_verdict: sdk(secret, ts, uvsig, uv, NOW) });
}

// ------------------------------------------------------------------ paddle
{
	const { Paddle } = require('@paddle/paddle-node-sdk');
	const paddle = new Paddle('pdl_sdbx_apikey_vectors');
	// Paddle Billing notification secrets are used as the whole string.
	const secret = 'pdl_ntfset_01jd8m0y9q7c3b2a1z0x9w8v7u_f8E1g2H3i4J5k6L7m8N9o0P1q2R3s4T5';
	const body = JSON.stringify({ event_id: 'evt_01hv8x2acma2gz7va6fe0s2ebn', event_type: 'transaction.completed', occurred_at: '2025-12-03T23:59:59.000000Z', notification_id: 'ntf_01hv8x2af5ya4ewpbsz2dbx8xt', data: { id: 'txn_01hv8wptq8987qeep44cyrewp9', status: 'completed' } });
	const ts = NOW - 1;
	const h1 = hmac('sha256', secret, `${ts}:${body}`, 'hex');
	const sdk = async (sec, b, sig, now = NOW) => atClock(now, async () => {
		try { return (await paddle.webhooks.isSignatureValid(b, sec, sig)) ? 'valid' : 'invalid'; }
		catch { return 'invalid'; }
	});
	const sig = `ts=${ts};h1=${h1}`;
	const H = (s) => ({ 'Paddle-Signature': s });
	add({ scheme: 'paddle', name: 'paddle_valid', sdk: pkg('@paddle/paddle-node-sdk'), secrets: [secret],
	    headers: H(sig), body, expected: 'valid', sdk_verdict: await sdk(secret, body, sig),
	    reason: 'Signed with node:crypto, verified by the SDK (it has no signer).' });
	add({ scheme: 'paddle', name: 'paddle_tampered', sdk: pkg('@paddle/paddle-node-sdk'), secrets: [secret],
	    headers: H(sig), body: body.replace('completed"', 'paid"'), expected: 'invalid', outcome: 'bad_signature',
	    sdk_verdict: await sdk(secret, body.replace('completed"', 'paid"'), sig) });
	add({ scheme: 'paddle', name: 'paddle_wrong_secret', sdk: pkg('@paddle/paddle-node-sdk'),
	    secrets: ['pdl_ntfset_other'], headers: H(sig), body, expected: 'invalid', outcome: 'bad_signature',
	    sdk_verdict: await sdk('pdl_ntfset_other', body, sig) });
	add({ scheme: 'paddle', name: 'paddle_expired', sdk: pkg('@paddle/paddle-node-sdk'), secrets: [secret],
	    headers: H(sig), body, now: NOW + 400, expected: 'invalid', outcome: 'stale',
	    sdk_verdict: await sdk(secret, body, sig, NOW + 400) });
	// Paddle's docs: during a secret rotation the header carries several h1.
	const old = hmac('sha256', 'pdl_ntfset_old', `${ts}:${body}`, 'hex');
	const two = `ts=${ts};h1=${old};h1=${h1}`;
	add({ scheme: 'paddle', name: 'paddle_two_h1', doc: 'https://developer.paddle.com/webhooks/signature-verification',
	    secrets: [secret], headers: H(two), body, expected: 'valid',
	    reason: 'Two h1 entries (a rotation); the SDK reads only the last h1, so it is not asked.' });
}

// ----------------------------------------------------------------- discord
{
	const { verifyKey } = await import('discord-interactions');
	// A fixed Ed25519 key pair (seed 32 × 0x2a), as Discord's portal shows
	// the public key: hex.
	const seed = Buffer.alloc(32, 0x2a);
	const priv = crypto.createPrivateKey({ key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]), format: 'der', type: 'pkcs8' });
	const pubHex = crypto.createPublicKey(priv).export({ format: 'der', type: 'spki' }).subarray(12).toString('hex');
	const other = crypto.createPrivateKey({ key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), Buffer.alloc(32, 7)]), format: 'der', type: 'pkcs8' });
	const otherHex = crypto.createPublicKey(other).export({ format: 'der', type: 'spki' }).subarray(12).toString('hex');
	const ts = String(NOW - 1);
	const sign = (b) => crypto.sign(null, Buffer.from(ts + b), priv).toString('hex');
	const sdk = async (b, sig, t, pk) => ((await verifyKey(b, sig, t, pk)) ? 'valid' : 'invalid');
	const H = (sig, t = ts) => ({ 'X-Signature-Ed25519': sig, 'X-Signature-Timestamp': t });
	const cmd = JSON.stringify({ id: '1448000000000000001', application_id: '1447000000000000000', type: 2, token: 'aW50ZXJhY3Rpb24', version: 1, data: { name: 'ping' } });
	const s = sign(cmd);
	add({ scheme: 'discord', name: 'discord_command', sdk: pkg('discord-interactions'), secrets: [pubHex],
	    headers: H(s), body: cmd, expected: 'valid', sdk_verdict: await sdk(cmd, s, ts, pubHex),
	    reason: 'Signed with node:crypto Ed25519, verified by discord-interactions verifyKey.' });
	const ping = '{"id":"1448000000000000002","application_id":"1447000000000000000","type":1,"version":1}';
	const sp = sign(ping);
	add({ scheme: 'discord', name: 'discord_ping', sdk: pkg('discord-interactions'), secrets: [pubHex],
	    headers: H(sp), body: ping, expected: 'valid', outcome: 'answer', answer: '{"type":1}',
	    doc: 'https://discord.com/developers/docs/interactions/overview#setting-up-an-endpoint',
	    sdk_verdict: await sdk(ping, sp, ts, pubHex) });
	add({ scheme: 'discord', name: 'discord_wrong_key', sdk: pkg('discord-interactions'), secrets: [otherHex],
	    headers: H(s), body: cmd, expected: 'invalid', outcome: 'bad_signature',
	    sdk_verdict: await sdk(cmd, s, ts, otherHex) });
	add({ scheme: 'discord', name: 'discord_tampered', sdk: pkg('discord-interactions'), secrets: [pubHex],
	    headers: H(s), body: cmd.replace('ping', 'pong'), expected: 'invalid', outcome: 'bad_signature',
	    sdk_verdict: await sdk(cmd.replace('ping', 'pong'), s, ts, pubHex) });
	const ts2 = String(NOW - 5);
	add({ scheme: 'discord', name: 'discord_timestamp_changed', sdk: pkg('discord-interactions'), secrets: [pubHex],
	    headers: H(s, ts2), body: cmd, expected: 'invalid', outcome: 'bad_signature',
	    sdk_verdict: await sdk(cmd, s, ts2, pubHex) });
	add({ scheme: 'discord', name: 'discord_rotation_two_keys', sdk: pkg('discord-interactions'), secrets: [otherHex, pubHex],
	    headers: H(s), body: cmd, expected: 'valid', key_index: 1, sdk_verdict: await sdk(cmd, s, ts, pubHex) });
}

// ------------------------------------------------------------------ gitlab
{
	// GitLab sends the secret token itself (no signature):
	// docs.gitlab.com/user/project/integrations/webhooks/#create-a-webhook
	// ("Secret token ... sent with the webhook request in the X-Gitlab-Token header").
	const doc = 'https://docs.gitlab.com/user/project/integrations/webhook_events/ and https://docs.gitlab.com/user/project/integrations/webhooks/';
	const token = 'glwh-7Yq2 x!';
	const body = JSON.stringify({ object_kind: 'push', event_name: 'push', ref: 'refs/heads/main' });
	const H = (t) => ({ 'X-Gitlab-Token': t, 'X-Gitlab-Event': 'Push Hook', 'X-Gitlab-Event-UUID': '13792a34-cac6-4fda-95a8-c58e00a3954e', 'X-Gitlab-Instance': 'https://gitlab.example.com' });
	add({ scheme: 'gitlab', name: 'gitlab_valid', doc, secrets: [token], headers: H(token), body,
	    expected: 'valid', id: '13792a34-cac6-4fda-95a8-c58e00a3954e', type: 'Push Hook' });
	add({ scheme: 'gitlab', name: 'gitlab_wrong_token', doc, secrets: [token], headers: H('glwh-7Yq2 x'), body,
	    expected: 'invalid', outcome: 'bad_signature' });
	add({ scheme: 'gitlab', name: 'gitlab_token_longer', doc, secrets: [token], headers: H(`${token}!`), body,
	    expected: 'invalid', outcome: 'bad_signature' });
	add({ scheme: 'gitlab', name: 'gitlab_rotation', doc, secrets: ['old-token', token], headers: H(token), body,
	    expected: 'valid', key_index: 1, id: '13792a34-cac6-4fda-95a8-c58e00a3954e', type: 'Push Hook' });
}

// ------------------------------------------------------------------ twilio
{
	const twilio = require('twilio');
	// Twilio's documented example (twilio.com/docs/usage/security,
	// "Validating Signatures from Twilio"): auth token 12345, this URL and
	// these parameters give 0/KCTR6DLpKmkAf8muzZqo1nDgQ=.
	const docToken = '12345';
	const docUrl = 'https://mycompany.com/myapp.php?foo=1&bar=2';
	const docParams = { CallSid: 'CA1234567890ABCDE', Caller: '+12349013030', Digits: '1234', From: '+12349013030', To: '+18005551212' };
	const form = (p) => Object.entries(p).map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v).replace(/%20/g, '+')}`).join('&');
	const sdk = (tok, sig, url, params, alg) => (twilio.validateRequest(tok, sig, url, params, alg) ? 'valid' : 'invalid');
	const docSig = twilio.getExpectedTwilioSignature(docToken, docUrl, docParams);
	if (docSig !== '0/KCTR6DLpKmkAf8muzZqo1nDgQ=') throw new Error(`twilio doc example: ${docSig}`);
	const H = (s, extra = {}) => ({ 'X-Twilio-Signature': s, 'Content-Type': 'application/x-www-form-urlencoded', ...extra });
	add({ scheme: 'twilio', name: 'twilio_docs_example', sdk: pkg('twilio'), doc: 'https://www.twilio.com/docs/usage/security#validating-signatures-from-twilio',
	    secrets: [docToken], url: docUrl, headers: H(docSig), body: form(docParams), expected: 'valid',
	    sdk_verdict: sdk(docToken, docSig, docUrl, docParams) });
	const token = '9f8e7d6c5b4a39281706f5e4d3c2b1a0';
	const url = 'https://hooks.example.net/webhook.fcgi/twilio';
	const params = { AccountSid: 'AC00000000000000000000000000000000', Body: 'Grüße & 100% ✓ a+b=c', From: '+15005550006', MessageSid: 'SM0123456789abcdef0123456789abcdef', NumMedia: '0', To: '+15005550001', SmsStatus: 'received' };
	const sig = twilio.getExpectedTwilioSignature(token, url, params);
	add({ scheme: 'twilio', name: 'twilio_sms_encoded', sdk: pkg('twilio'), secrets: [token], url,
	    headers: H(sig, { 'I-Twilio-Idempotency-Token': 'b2d9e2f1-5c1e-4d0a-9f3e-0f4b7e5d1a23' }), body: form(params),
	    expected: 'valid', id: 'b2d9e2f1-5c1e-4d0a-9f3e-0f4b7e5d1a23', sdk_verdict: sdk(token, sig, url, params) });
	const withPort = 'https://hooks.example.net:443/webhook.fcgi/twilio';
	add({ scheme: 'twilio', name: 'twilio_url_with_default_port', sdk: pkg('twilio'), secrets: [token], url: withPort,
	    headers: H(sig), body: form(params), expected: 'valid', sdk_verdict: sdk(token, sig, withPort, params),
	    reason: 'Signed for the URL without the port; the SDK tries the URL with and without :443.' });
	const tampered = { ...params, Body: 'Grüße & 100% ✓ a+b=d' };
	add({ scheme: 'twilio', name: 'twilio_tampered', sdk: pkg('twilio'), secrets: [token], url, headers: H(sig),
	    body: form(tampered), expected: 'invalid', outcome: 'bad_signature', sdk_verdict: sdk(token, sig, url, tampered) });
	const other = 'https://hooks.example.net/webhook.fcgi/other';
	add({ scheme: 'twilio', name: 'twilio_other_url', sdk: pkg('twilio'), secrets: [token], url: other, headers: H(sig),
	    body: form(params), expected: 'invalid', outcome: 'bad_signature', sdk_verdict: sdk(token, sig, other, params) });
	add({ scheme: 'twilio', name: 'twilio_wrong_token', sdk: pkg('twilio'), secrets: ['0000'], url, headers: H(sig),
	    body: form(params), expected: 'invalid', outcome: 'bad_signature', sdk_verdict: sdk('0000', sig, url, params) });
	// Repeated parameters: the SDK sorts each name's distinct values.
	const rep = 'To=%2B1&Media=b&Media=a&From=%2B2';
	const repParams = { To: '+1', Media: ['b', 'a'], From: '+2' };
	const rsig = twilio.getExpectedTwilioSignature(token, url, repParams);
	add({ scheme: 'twilio', name: 'twilio_repeated_param', sdk: pkg('twilio'), secrets: [token], url, headers: H(rsig),
	    body: rep, expected: 'valid', sdk_verdict: sdk(token, rsig, url, repParams) });
	// The newer HMAC-SHA256 signature, named in X-Twilio-Webhooks-Signature-Settings.
	const s256 = twilio.getExpectedTwilioSignature(token, url, params, 'HMAC_SHA256');
	add({ scheme: 'twilio', name: 'twilio_hmac_sha256', sdk: pkg('twilio'), secrets: [token], url,
	    headers: H(s256, { 'X-Twilio-Webhooks-Signature-Settings': 'key=webhooks_sharedkey_x,algorithm=HMAC_SHA256' }),
	    body: form(params), expected: 'valid', sdk_verdict: sdk(token, s256, url, params, 'HMAC_SHA256') });
	// JSON bodies: Twilio appends bodySHA256 to the URL it was given and
	// signs that URL only.  The config holds the URL as given (`url`); the
	// request's query string (`query`) is what Twilio appended: no config
	// can hold one body's hash.
	const jbody = '{"ParentAccountSid":"AC0","Payload":"{}"}';
	const jquery = `bodySHA256=${crypto.createHash('sha256').update(jbody).digest('hex')}`;
	const jurl = `${url}?${jquery}`;
	const jsig = twilio.getExpectedTwilioSignature(token, jurl, {});
	const jsdk = twilio.validateRequestWithBody(token, jsig, jurl, jbody) ? 'valid' : 'invalid';
	add({ scheme: 'twilio', name: 'twilio_json_body_sha256', sdk: pkg('twilio'), secrets: [token], url, query: jquery,
	    headers: { 'X-Twilio-Signature': jsig, 'Content-Type': 'application/json' }, body: jbody,
	    expected: 'valid', sdk_verdict: jsdk });
	const jbad = jbody.replace('AC0', 'AC1');
	add({ scheme: 'twilio', name: 'twilio_json_body_changed', sdk: pkg('twilio'), secrets: [token], url, query: jquery,
	    headers: { 'X-Twilio-Signature': jsig, 'Content-Type': 'application/json' }, body: jbad,
	    expected: 'invalid', outcome: 'bad_signature',
	    sdk_verdict: twilio.validateRequestWithBody(token, jsig, jurl, jbad) ? 'valid' : 'invalid' });
}

// ---------------------------------------------------------------- hmac
{
	// The generic scheme, configured by keys; signed with node:crypto.
	const secret = 'generic secret';
	const body = '{"event":"thing.happened","id":"ev_42"}';
	const ts = String(NOW - 1);
	const p256 = { header: 'X-Signature', prefix: 'sha256=', algorithm: 'sha256', encoding: 'hex' };
	add({ scheme: 'hmac', name: 'hmac_sha256_hex_prefix', params: p256, secrets: [secret],
	    headers: { 'X-Signature': `sha256=${hmac('sha256', secret, body, 'hex')}` }, body, expected: 'valid' });
	add({ scheme: 'hmac', name: 'hmac_sha256_hex_prefix_missing', params: p256, secrets: [secret],
	    headers: { 'X-Signature': hmac('sha256', secret, body, 'hex') }, body, expected: 'invalid', outcome: 'bad_signature' });
	const p512 = { header: 'X-Hook-Sig', algorithm: 'sha512', encoding: 'base64', timestamp_header: 'X-Hook-Time', separator: '.', tolerance: 300 };
	const m512 = hmac('sha512', secret, `${ts}.${body}`, 'base64');
	add({ scheme: 'hmac', name: 'hmac_sha512_base64_timestamp', params: p512, secrets: [secret],
	    headers: { 'X-Hook-Sig': m512, 'X-Hook-Time': ts }, body, expected: 'valid' });
	add({ scheme: 'hmac', name: 'hmac_sha512_expired', params: p512, secrets: [secret], now: NOW + 400,
	    headers: { 'X-Hook-Sig': m512, 'X-Hook-Time': ts }, body, expected: 'invalid', outcome: 'stale' });
	const p1 = { header: 'X-Sig', algorithm: 'sha1', encoding: 'base64' };
	add({ scheme: 'hmac', name: 'hmac_sha1_base64', params: p1, secrets: ['k'],
	    headers: { 'X-Sig': hmac('sha1', 'k', body, 'base64') }, body, expected: 'valid' });
	add({ scheme: 'hmac', name: 'hmac_sha1_wrong_key', params: p1, secrets: ['j'],
	    headers: { 'X-Sig': hmac('sha1', 'k', body, 'base64') }, body, expected: 'invalid', outcome: 'bad_signature' });
}

// ------------------------------------------------------------ recognition
// A delivery for one scheme sent to an endpoint of another: refused, and
// named.  (The C test checks the scheme recognised from the headers.)
{
	const byScheme = {};
	for (const v of vectors)
		if (v.expected === 'valid' && !byScheme[v.scheme] && v.scheme !== 'hmac' && v.outcome !== 'ping')
			byScheme[v.scheme] = v;
	const order = Object.keys(byScheme);
	for (let i = 0; i < order.length; i++) {
		const v = byScheme[order[i]];
		const endpoint = order[(i + 1) % order.length];
		const e = byScheme[endpoint];
		add({ scheme: endpoint, name: `recognise_${v.scheme}_at_${endpoint}`, secrets: [e.secrets[0]],
		    headers: v.headers, body: v.body, url: e.url, now: v.now, expected: 'invalid',
		    outcome: 'other_scheme', looks_like: v.scheme });
	}
}

// ----------------------------------------------------------- mercadopago
// After the recognition ring above, so the ring's pairs stay as they were;
// its own two recognition vectors are at the end of this section.
{
	const { WebhookSignatureValidator, InvalidWebhookSignatureError } = require('mercadopago');
	// Mercado Pago signs no body and no URL: x-signature is
	// ts=<Unix seconds>,v1=<hex HMAC-SHA256> over the manifest
	// `id:<data.id of the query>;request-id:<x-request-id>;ts:<ts>;`, a part
	// left out when its value is absent, keyed with the application's secret
	// signature as text.  The SDK only verifies, so vectors are signed here
	// with node:crypto and checked by WebhookSignatureValidator.validate.
	const secret = '8b1f4c2e9a7d36f05e1c4b9a2d7f8e63c0a5b4d1e9f2a7c6b3d8e0f1a2c4b6d9';
	const secret2 = '0f9e8d7c6b5a49382716f5e4d3c2b1a00f9e8d7c6b5a49382716f5e4d3c2b1a0';
	const rid = 'bb56a2f1-6aae-46ac-982e-9dcd3581d08e';
	const ts = String(NOW - 2);
	const manifest = (dataId, reqId, t) =>
		`${dataId ? `id:${dataId};` : ''}${reqId ? `request-id:${reqId};` : ''}ts:${t};`;
	const sign = (sec, dataId, reqId, t = ts) => `ts=${t},v1=${hmac('sha256', sec, manifest(dataId, reqId, t), 'hex')}`;
	// The SDK's tolerance is optional; the receiver's window is 300 s.
	const sdk = (sec, h, query, now = NOW) => {
		try {
			WebhookSignatureValidator.validate({ xSignature: h['x-signature'],
			    xRequestId: h['x-request-id'], dataId: new URLSearchParams(query).get('data.id'),
			    secret: sec, toleranceSeconds: 300, now: () => now * 1000 });
			return 'valid';
		} catch (e) {
			if (!(e instanceof InvalidWebhookSignatureError)) throw e;
			return 'invalid';
		}
	};
	const H = (s, reqId = rid) => ({ 'x-signature': s, ...(reqId ? { 'x-request-id': reqId } : {}), 'Content-Type': 'application/json' });
	const notice = { action: 'payment.updated', api_version: 'v1', data: { id: '123456' },
	    date_created: '2025-12-03T23:59:58Z', id: 12345678901, live_mode: true, type: 'payment', user_id: '44444' };
	const body = JSON.stringify(notice);
	const query = 'data.id=123456&type=payment';
	const id = String(notice.id);
	const type = notice.action;
	const sig = sign(secret, '123456', rid);
	add({ scheme: 'mercadopago', name: 'mercadopago_valid', sdk: pkg('mercadopago'), secrets: [secret],
	    query, headers: H(sig), body, expected: 'valid', id, type,
	    sdk_verdict: sdk(secret, H(sig), query),
	    reason: 'Signed with node:crypto, verified by the SDK (it has no signer).' });
	add({ scheme: 'mercadopago', name: 'mercadopago_rotation_two_secrets', sdk: pkg('mercadopago'),
	    secrets: [secret2, secret], query, headers: H(sig), body, expected: 'valid', key_index: 1, id, type,
	    sdk_verdict: sdk(secret, H(sig), query) });
	add({ scheme: 'mercadopago', name: 'mercadopago_wrong_secret', sdk: pkg('mercadopago'), secrets: [secret2],
	    query, headers: H(sig), body, expected: 'invalid', outcome: 'bad_signature',
	    sdk_verdict: sdk(secret2, H(sig), query) });
	const tq = 'data.id=123457&type=payment';
	add({ scheme: 'mercadopago', name: 'mercadopago_tampered_data_id', sdk: pkg('mercadopago'), secrets: [secret],
	    query: tq, headers: H(sig), body, expected: 'invalid', outcome: 'bad_signature',
	    sdk_verdict: sdk(secret, H(sig), tq),
	    reason: 'data.id in the query changed; the signature covers it.' });
	const noRid = sign(secret, '123456', null);
	add({ scheme: 'mercadopago', name: 'mercadopago_no_request_id', sdk: pkg('mercadopago'), secrets: [secret],
	    query, headers: H(noRid, null), body, expected: 'valid', id, type,
	    sdk_verdict: sdk(secret, H(noRid, null), query),
	    reason: 'No x-request-id header: the manifest has no request-id part (id:123456;ts:…;), as the SDK builds it.' });
	add({ scheme: 'mercadopago', name: 'mercadopago_expired', sdk: pkg('mercadopago'), secrets: [secret],
	    query, headers: H(sig), body, now: NOW + 400, expected: 'invalid', outcome: 'stale',
	    sdk_verdict: sdk(secret, H(sig), query, NOW + 400),
	    reason: 'ts is Unix seconds; 402 s from the clock, outside the 300 s window.' });
	const changed = JSON.stringify({ ...notice, live_mode: false, user_id: '55555' });
	add({ scheme: 'mercadopago', name: 'mercadopago_body_not_signed', sdk: pkg('mercadopago'), secrets: [secret],
	    query, headers: H(sig), body: changed, expected: 'valid', id, type,
	    sdk_verdict: sdk(secret, H(sig), query),
	    reason: 'The body changed, headers and query not: still valid, because Mercado Pago signs no body (only data.id, x-request-id and ts); the body is not to be trusted.' });
	// An alphanumeric data.id (an order).  Mercado Pago's documentation
	// says to lower-case it in the manifest; the SDK uses it as sent.
	const doc = 'https://www.mercadopago.com.ar/developers/es/docs/checkout-api-orders/notifications';
	const ord = 'ORD01JQ4S4KY8HWQ6NA5PXB65B3D3';
	const onotice = { action: 'order.processed', api_version: 'v1', data: { id: ord },
	    date_created: '2025-12-03T23:59:58Z', id: 12345678902, live_mode: true, type: 'order', user_id: '44444' };
	const obody = JSON.stringify(onotice);
	const oq = `data.id=${ord}&type=order`;
	const lower = sign(secret, ord.toLowerCase(), rid);
	add({ scheme: 'mercadopago', name: 'mercadopago_uppercase_id_signed_lowercased', sdk: pkg('mercadopago'), doc,
	    secrets: [secret], query: oq, headers: H(lower), body: obody, expected: 'invalid', outcome: 'bad_signature',
	    sdk_verdict: sdk(secret, H(lower), oq),
	    reason: `Signed over id:${ord.toLowerCase()} (the documentation's rule: lower-case an alphanumeric data.id); the SDK uses data.id as sent and refuses it.` });
	const asSent = sign(secret, ord, rid);
	add({ scheme: 'mercadopago', name: 'mercadopago_uppercase_id_signed_as_sent', sdk: pkg('mercadopago'), doc,
	    secrets: [secret], query: oq, headers: H(asSent), body: obody, expected: 'valid',
	    id: String(onotice.id), type: onotice.action, sdk_verdict: sdk(secret, H(asSent), oq),
	    reason: `Signed over id:${ord} as the query carries it: the SDK does not lower-case data.id and accepts it.` });
	// Recognition, as the ring above builds it: a Mercado Pago delivery at a
	// Stripe endpoint and a Stripe delivery at a Mercado Pago endpoint.
	const st = vectors.find((v) => v.name === 'stripe_valid');
	add({ scheme: 'stripe', name: 'recognise_mercadopago_at_stripe', secrets: [st.secrets[0]],
	    query, headers: H(sig), body, expected: 'invalid', outcome: 'other_scheme', looks_like: 'mercadopago' });
	add({ scheme: 'mercadopago', name: 'recognise_stripe_at_mercadopago', secrets: [secret],
	    headers: st.headers, body: st.body, now: st.now, expected: 'invalid', outcome: 'other_scheme',
	    looks_like: 'stripe' });
}

const meta = {
	generated_by: 'tests/vectors/gen/make-provider-vectors.mjs',
	sdks: Object.fromEntries(['mercadopago', 'stripe', '@octokit/webhooks-methods', 'svix', 'standardwebhooks',
	    '@paddle/paddle-node-sdk', 'discord-interactions', 'twilio', '@slack/bolt',
	    '@shopify/shopify-api'].map((n) => [n, version(n)])),
	vectors,
};
fs.writeFileSync(OUT, `${JSON.stringify(meta, null, 1)}\n`);
console.log(`${OUT}: ${vectors.length} vectors`);
