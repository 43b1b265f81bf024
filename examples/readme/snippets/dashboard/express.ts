import express, { type RequestHandler } from 'express';
import { dashboard } from './setup.js';

declare const requireLogin: RequestHandler;
const app = express();

app.use('/loom', requireLogin, dashboard); // basePath may be left out: Express tells the mount path
