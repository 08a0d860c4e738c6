<?php
// bench/php/receiver.php: the Standard Webhooks receiver a shared-hosting
// user would write instead of webhook.fcgi (bench/php.py, issue 5).
//
// Two variants, by WEBHOOK_PHP_PERSISTENT in its environment: A ("0")
// opens the database on every request (PDO without persistent connections,
// as most such scripts do); B ("1") keeps a persistent connection
// (PDO::ATTR_PERSISTENT: each PHP process opens the database once and
// reuses the handle).  Nothing else differs.
//
// Per request: the three webhook-* headers, the timestamp within the
// tolerance, the v1 signature (HMAC-SHA256 over "id.timestamp.body" with the
// base64-decoded secret, compared with hash_equals against every entry of
// the header), then one transaction in SQLite (WAL, synchronous = FULL:
// the same durability as webhook.fcgi's default): BEGIN IMMEDIATE; INSERT
// ... ON CONFLICT(webhook_id) DO NOTHING; COMMIT; then 200.
//
// The config (secret, database path) is a PHP file outside the document
// root, named by the WEBHOOK_PHP_CONFIG environment variable:
//   <?php return ['secret' => 'whsec_…', 'database' => '/…/inbox.db',
//                 'tolerance' => 300];
declare(strict_types=1);

$cfg = require getenv('WEBHOOK_PHP_CONFIG');

function answer(int $status, string $text): void
{
    http_response_code($status);
    header('Content-Type: text/plain');
    if ($status === 503) {
        header('Retry-After: 5');
    }
    echo $text, "\n";
    exit;
}

if (($_SERVER['REQUEST_METHOD'] ?? '') !== 'POST') {
    header('Allow: POST');
    answer(405, 'method not allowed');
}
$id = $_SERVER['HTTP_WEBHOOK_ID'] ?? '';
$ts = $_SERVER['HTTP_WEBHOOK_TIMESTAMP'] ?? '';
$sig = $_SERVER['HTTP_WEBHOOK_SIGNATURE'] ?? '';
if ($id === '' || $ts === '' || $sig === '') {
    answer(400, 'missing webhook headers');
}
if (!ctype_digit($ts) || abs(time() - (int)$ts) > $cfg['tolerance']) {
    answer(401, 'timestamp outside the tolerance');
}
$body = file_get_contents('php://input');
$key = base64_decode(substr($cfg['secret'], strlen('whsec_')), true);
$expected = base64_encode(hash_hmac('sha256', $id . '.' . $ts . '.' . $body,
    $key, true));
$ok = false;
foreach (explode(' ', $sig) as $entry) {
    $parts = explode(',', $entry, 2);
    if (count($parts) === 2 && $parts[0] === 'v1' &&
        hash_equals($expected, $parts[1])) {
        $ok = true;
        break;
    }
}
if (!$ok) {
    answer(401, 'bad signature');
}

$t = microtime(true);
$received = gmdate('Y-m-d\TH:i:s', (int)$t) .
    sprintf('.%06dZ', (int)(($t - floor($t)) * 1000000));
$db = null;
try {
    $db = new PDO('sqlite:' . $cfg['database'], null, null, [
        PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION,
        PDO::ATTR_TIMEOUT => 5,         // busy timeout, seconds
        PDO::ATTR_PERSISTENT => getenv('WEBHOOK_PHP_PERSISTENT') === '1',
    ]);
    $db->exec('PRAGMA journal_mode = WAL');
    $db->exec('PRAGMA synchronous = FULL');
    $db->exec('BEGIN IMMEDIATE');
    $st = $db->prepare('INSERT INTO webhooks (webhook_id, webhook_timestamp,'
        . ' body, received_at) VALUES (?, ?, ?, ?)'
        . ' ON CONFLICT(webhook_id) DO NOTHING');
    $st->bindValue(1, $id, PDO::PARAM_STR);
    $st->bindValue(2, (int)$ts, PDO::PARAM_INT);
    $st->bindValue(3, $body, PDO::PARAM_LOB);
    $st->bindValue(4, $received, PDO::PARAM_STR);
    $st->execute();
    $new = $st->rowCount();
    $db->exec('COMMIT');
} catch (PDOException $e) {
    if ($db !== null) {
        try {
            $db->exec('ROLLBACK');
        } catch (PDOException $ignored) {
        }
    }
    error_log('webhook ' . $id . ': ' . $e->getMessage());
    answer(503, 'try again later');
}
answer(200, $new === 1 ? 'stored' : 'duplicate');
