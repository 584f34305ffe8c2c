// Projects: a merchant application with its keys (stored as hashes) and settings. The rules for
// creating and changing them live in src/services/projects.ts.
import type { Insertable, Kysely, Selectable, Updateable } from 'kysely';
import type { ProjectsTable } from './migrations/0001_platform.js';
import type { Tables } from './migrations/index.js';

export type ProjectRow = Selectable<ProjectsTable>;

/** The authenticated project as routes see it: the row without the key hashes, plus `id`. */
export type Project = Omit<ProjectRow, 'secret_key_hash' | 'private_key_hash'> & { readonly id: string };

export function toProject(row: ProjectRow): Project {
  const { secret_key_hash: _s, private_key_hash: _p, ...rest } = row;
  return { ...rest, id: row.application_id };
}

export interface ProjectStore {
  insert(values: Insertable<ProjectsTable>): Promise<Project>;
  /** The changed project, or undefined when there is no such project. */
  update(applicationId: string, changes: Updateable<ProjectsTable>): Promise<Project | undefined>;
  findById(applicationId: string): Promise<ProjectRow | undefined>;
  findByClientKey(clientKey: string): Promise<ProjectRow | undefined>;
  /** Oldest first. */
  list(): Promise<Project[]>;
}

export function createProjectStore(db: Kysely<Tables>): ProjectStore {
  return {
    async insert(values) {
      return toProject(await db.insertInto('projects').values(values).returningAll().executeTakeFirstOrThrow());
    },

    async update(applicationId, changes) {
      const row = await db
        .updateTable('projects')
        .set(changes)
        .where('application_id', '=', applicationId)
        .returningAll()
        .executeTakeFirst();
      return row && toProject(row);
    },

    async findById(applicationId) {
      return db.selectFrom('projects').selectAll().where('application_id', '=', applicationId).executeTakeFirst();
    },

    async findByClientKey(clientKey) {
      return db.selectFrom('projects').selectAll().where('client_key', '=', clientKey).executeTakeFirst();
    },

    async list() {
      const rows = await db.selectFrom('projects').selectAll().orderBy('created_at', 'asc').execute();
      return rows.map(toProject);
    },
  };
}
