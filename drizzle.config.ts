import { defineConfig } from "drizzle-kit";

// `npm run db:generate` writes a new migration from src/store/sqlite/schema.ts. Migrations are
// committed and applied by the server at start-up (src/store/sqlite/db.ts).
export default defineConfig({
  dialect: "sqlite",
  schema: "./src/store/sqlite/schema.ts",
  out: "./src/store/sqlite/migrations",
});
