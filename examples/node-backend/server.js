// Starts the deposit backend: FENCELOCK_ENDPOINT (comma-separated endpoints), DATABASE_URL, PORT.
import pg from 'pg';
import { Client } from 'fencelock';

import { accountsDdl, createApp } from './app.js';

const client = new Client();  // $FENCELOCK_ENDPOINT (comma-separated), $FENCELOCK_API_KEY, as the CLI
const db = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10, connectionTimeoutMillis: 5000 });
await db.query(accountsDdl);
const server = await createApp({ client, db });
const port = Number(process.env.PORT ?? 3000);
server.listen(port, '127.0.0.1', () => console.log(`deposits on http://127.0.0.1:${port}`));
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => server.close(() => db.end().then(() => process.exit(0))));
}
