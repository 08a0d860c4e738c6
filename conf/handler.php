<?php
// A sample handler for webhook-drain, in PHP: what a shared-hosting user
// would write. The event's effect and the record of its WEBHOOK_ID are
// committed in ONE transaction, so a second hand-out (delivery is at least
// once) changes nothing, and a crash between them cannot happen.
//
//   handler = /usr/bin/php /home/you/webhook/handler.php
//
// Here the effect is a row in a `clients` table of the application's own
// SQLite database (APP_DB, default ./app.db); yours would update your ERP.

$id = getenv('WEBHOOK_ID');
$body = stream_get_contents(STDIN);
$event = json_decode($body, true);   // null for non-JSON (e.g. in_… relays)

$db = new PDO('sqlite:' . (getenv('APP_DB') ?: __DIR__ . '/app.db'));
$db->setAttribute(PDO::ATTR_ERRMODE, PDO::ERRMODE_EXCEPTION);
$db->exec('PRAGMA busy_timeout = 5000');
$db->exec('CREATE TABLE IF NOT EXISTS processed (webhook_id TEXT PRIMARY KEY)');
$db->exec('CREATE TABLE IF NOT EXISTS clients (id TEXT PRIMARY KEY, data TEXT, event TEXT)');

$db->beginTransaction();
$seen = $db->prepare('INSERT OR IGNORE INTO processed (webhook_id) VALUES (?)');
$seen->execute([$id]);
if ($seen->rowCount() === 0) {           // handled before: nothing to do
    $db->rollBack();
    echo "already handled $id\n";
    exit(0);
}
if (is_array($event) && getenv('WEBHOOK_OBJECT') === 'client') {
    if (($event['type'] ?? '') === 'client.deleted') {
        $db->prepare('DELETE FROM clients WHERE id = ?')
           ->execute([getenv('WEBHOOK_OBJECT_ID')]);
    } else {
        $db->prepare('INSERT INTO clients (id, data, event) VALUES (?, ?, ?)
                      ON CONFLICT (id) DO UPDATE SET data = excluded.data,
                      event = excluded.event')
           ->execute([getenv('WEBHOOK_OBJECT_ID'), json_encode($event['data']), $id]);
    }
}
$db->commit();
echo "handled $id\n";
exit(0);
