#!/usr/bin/env node
// `npx trellis ...`: runs the TypeScript entry point through tsx (Node 20 cannot strip types).
import { register } from "tsx/esm/api";

register();
await import("../src/main.ts");
