import Fastify from 'fastify';
import { dashboard } from './setup.js';

const app = Fastify();

import middie from '@fastify/middie';
await app.register(middie);
app.use('/loom', dashboard);
