import { defineConfig } from "drizzle-kit";

// The PostgreSQL engine's migrations, from src/store/postgres/schema.ts:
// `npx drizzle-kit generate --config drizzle.postgres.config.ts` writes a new one, committed
// and applied at start-up under an advisory lock (src/store/postgres/connection.ts).
export default defineConfig({
  dialect: "postgresql",
  schema: "./src/store/postgres/schema.ts",
  out: "./src/store/postgres/migrations",
});
