// `npm run demo`: a short tour of what spark does, on data it makes itself.
import { demoGather } from './demo-gather.js';

console.log('== Engram row store: batched gathers from a packed page-layout table');
await demoGather();
