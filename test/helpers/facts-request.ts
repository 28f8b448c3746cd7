// A node-facts request asking for nothing but what `over` adds (the probe's and answer's tests).
import { FACTS_VERSION, type FactsRequest } from '../../src/preflight-api/node-facts.js';

export function factsRequest(over: Partial<FactsRequest>): FactsRequest {
  return {
    version: FACTS_VERSION,
    paths: [],
    texts: [],
    free: [],
    ports: [],
    images: [],
    docker: 'docker',
    sysfs: '/sys',
    procNet: '/proc/net',
    snapshot: [],
    ...over,
  };
}
