import 'reflect-metadata';
import { afterEach, describe, expect, test } from '@jest/globals';
import { Controller, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import express from 'express';
import Fastify from 'fastify';
import middie from '@fastify/middie';
import { createServer, type Server } from 'node:http';
import { startFixture, type DashboardFixture, type Mount } from './fixture.js';
import { Visitor } from './http-client.js';

let fixture: DashboardFixture | undefined;
afterEach(async () => {
  await fixture?.close();
  fixture = undefined;
});

/**
 * What every host must give: pages under /loom with links under /loom, a POST action (CSRF token,
 * form body read whether or not the host parsed it) that changes the store, and the host's own
 * routes left alone.
 */
async function checkMounted(f: DashboardFixture): Promise<void> {
  const v = new Visitor(f.url);
  const overview = await v.page('/loom');
  expect(overview.status).toBe(200);
  expect(overview.text).toContain('href="/loom/jobs?status=dead"');
  expect(overview.text).toContain('src="/loom/assets/dashboard.js?v=');
  expect((await v.get('/loom/assets/dashboard.css')).status).toBe(200);
  const dead = await v.page('/loom/jobs?status=dead');
  expect(dead.text).toContain('data-test="retry-all"');
  const retried = await v.post('/loom/actions/dead-letters/retry', {});
  expect(retried.status).toBe(303);
  expect(retried.location).toBe('/loom/jobs?status=dead');
  expect((await v.get(retried.location!)).text).toContain('2 dead letters queued again.');
  expect((await f.store.listQueues()).find((q) => q.name === 'webhooks')!.counts.dead).toBe(0);
  const app = await fetch(`${f.url}/health`);
  expect(await app.text()).toBe('app ok');
}

describe('mounting', () => {
  test('node:http: the handler checks the base path itself', async () => {
    const mount: Mount = async (dashboard) => ({
      server: createServer((req, res) => dashboard(req, res, () => res.end('app ok'))),
    });
    fixture = await startFixture({ mount });
    await checkMounted(fixture);
  });

  test('Express: app.use("/loom", dashboard) takes the mount path from the request, after express.urlencoded()', async () => {
    const mount: Mount = async (dashboard) => {
      const app = express();
      app.use(express.urlencoded({ extended: true }));
      app.use('/loom', dashboard);
      app.get('/health', (_req, res) => {
        res.send('app ok');
      });
      return { server: createServer(app) };
    };
    fixture = await startFixture({ basePath: undefined, mount });
    await checkMounted(fixture);
  });

  test('Fastify with @fastify/middie: app.use("/loom", dashboard)', async () => {
    let close: () => Promise<void> = async () => {};
    const mount: Mount = async (dashboard) => {
      const app = Fastify();
      await app.register(middie);
      app.use('/loom', dashboard);
      app.get('/health', async () => 'app ok');
      await app.listen({ port: 0, host: '127.0.0.1' });
      close = () => app.close();
      return { server: app.server, close: () => close() };
    };
    fixture = await startFixture({ mount });
    await checkMounted(fixture);
  });

  test('NestJS: app.use("/loom", dashboard) on the Express platform (whose body parser runs first)', async () => {
    @Controller()
    class HealthController {
      @Get('health')
      health(): string {
        return 'app ok';
      }
    }
    @Module({ controllers: [HealthController] })
    class AppModule {}
    const mount: Mount = async (dashboard) => {
      const app = await NestFactory.create(AppModule, { logger: false });
      app.use('/loom', dashboard);
      await app.listen(0, '127.0.0.1');
      return { server: app.getHttpServer() as Server, close: () => app.close() };
    };
    fixture = await startFixture({ mount });
    await checkMounted(fixture);
  });
});
