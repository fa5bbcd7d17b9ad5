import type { TestProject } from "vitest/node";
import { startLocalWorker } from "../../../scripts/lib/local-worker.mjs";

// The dx range of ports on this machine: 8800-8809 (inspector 9800-9809). SDK_TEST_PORT overrides.
const PORT = Number(process.env.SDK_TEST_PORT ?? 8800);

declare module "vitest" {
  export interface ProvidedContext {
    baseUrl: string;
    adminToken: string;
  }
}

export default async function setup(project: TestProject) {
  const worker = await startLocalWorker(PORT);
  project.provide("baseUrl", worker.baseUrl);
  project.provide("adminToken", worker.adminToken);
  return worker.stop;
}
