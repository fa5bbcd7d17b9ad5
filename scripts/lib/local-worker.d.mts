export declare const LOCAL_SECRETS: Record<string, string>;
export declare function startLocalWorker(port: number, vars?: Record<string, string>): Promise<{
  baseUrl: string;
  adminToken: string;
  stop: () => Promise<void>;
  log: () => string;
}>;
