// bench/run's peer: the receiver a JavaScript developer writes in twenty
// lines (docs/receiver-throughput.md).  node:http, the reference
// standardwebhooks library, better-sqlite3 in WAL with synchronous = FULL,
// one INSERT and commit per request, no web server in front.
// Environment: PEER_PORT, PEER_DB (the SQLite file), PEER_SECRET (whsec_…).
const http = require("node:http");
const { Webhook } = require("standardwebhooks");
const Database = require("better-sqlite3");

const wh = new Webhook(process.env.PEER_SECRET);
const db = new Database(process.env.PEER_DB);
db.pragma("journal_mode = WAL");
db.pragma("synchronous = FULL");
db.exec("CREATE TABLE IF NOT EXISTS events (webhook_id TEXT PRIMARY KEY, body TEXT NOT NULL)");
const insert = db.prepare("INSERT INTO events (webhook_id, body) VALUES (?, ?) ON CONFLICT DO NOTHING");

http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (chunk) => chunks.push(chunk));
  req.on("end", () => {
    const body = Buffer.concat(chunks).toString("utf8");
    try {
      wh.verify(body, req.headers);
    } catch (e) {
      return res.writeHead(401).end();
    }
    insert.run(req.headers["webhook-id"], body);
    res.writeHead(200, { "Content-Type": "text/plain" }).end("stored\n");
  });
}).listen(Number(process.env.PEER_PORT), "127.0.0.1");
