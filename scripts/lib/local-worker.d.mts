export declare const LOCAL_SECRETS: Record<string, string>;
export declare function startLocalWorker(port: number): Promise<{
  baseUrl: string;
  adminToken: string;
  stop: () => Promise<void>;
  log: () => string;
}>;
