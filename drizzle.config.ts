import { defineConfig } from "drizzle-kit";

// `npm run db:generate` writes a new migration from src/store/schema.ts. Migrations are
// committed and applied by the server at start-up (src/store/db.ts).
export default defineConfig({
  dialect: "sqlite",
  schema: "./src/store/schema.ts",
  out: "./src/store/migrations",
});
