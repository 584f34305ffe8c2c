// The sandbox dashboard's sessions, kept on the server so that they can end: the cookie carries only a random id,
// this table a keyed MAC of it (never the id), who signed in and until when. A row is deleted when its session ends
// (sign-out, a key rotation or the disabling of its project, a changed admin token, idle or lifetime reached).
import { sql, type ColumnType } from 'kysely';
import { defineMigration } from '../migrate.js';

export interface DashboardSessionsTable {
  /** keyring MAC (purpose `dashboard-session`) of the cookie's session id */
  id_hash: string;
  kind: 'admin' | 'keys';
  /** the project the session looks at: the keys' own, or the one an admin picked (null: an admin before a pick) */
  application_id: string | null;
  /** admin: keyring MAC of the admin token it signed in with; the session is void once the current token's differs */
  admin_token_mac: string | null;
  /** keys: keyring MAC of the secret key's hash it signed in with (which key, never the key) */
  key_mac: string | null;
  created_at: Date;
  last_seen_at: Date;
  /** the absolute end, whatever happens meanwhile */
  expires_at: Date;
  /** a secret this session just made and may be shown once: keyring MAC of (what, secret); null once shown */
  reveal_mac: ColumnType<string | null, string | null | undefined, string | null>;
  reveal_until: ColumnType<Date | null, Date | null | undefined, Date | null>;
}

export interface DashboardSessionTables {
  dashboard_sessions: DashboardSessionsTable;
}

export const migration = defineMigration<DashboardSessionTables>({
  name: '0016_dashboard_sessions',
  async up(db) {
    await sql`create table dashboard_sessions (
      id_hash text primary key,
      kind text not null check (kind in ('admin', 'keys')),
      application_id text references projects(application_id) on delete cascade,
      admin_token_mac text,
      key_mac text,
      created_at timestamptz not null,
      last_seen_at timestamptz not null,
      expires_at timestamptz not null,
      reveal_mac text,
      reveal_until timestamptz,
      check ((kind = 'admin') = (admin_token_mac is not null)),
      check (kind = 'admin' or (application_id is not null and key_mac is not null))
    )`.execute(db);
    await sql`create index dashboard_sessions_application on dashboard_sessions (application_id)`.execute(db);
    await sql`create index dashboard_sessions_expires on dashboard_sessions (expires_at)`.execute(db);
  },
});
