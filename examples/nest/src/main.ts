/** `npm run nest`: the app on a MongoDB found with no setup, serving HTTP until Ctrl-C. */
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module.js';
import { MongoConnection } from './mongo.module.js';

const app = await NestFactory.create(AppModule);
app.enableShutdownHooks(); // SIGINT / SIGTERM: stop claiming, let running jobs finish, then exit
await app.listen(process.env.PORT ?? 3000);
const url = (await app.getUrl()).replace('[::1]', 'localhost');
console.log(app.get(MongoConnection).description);
console.log(`Nest app on ${url}. Try:
  curl -s -X POST ${url}/signups -H 'content-type: application/json' -d '{"email":"ada@example.com"}'
  curl -s -X POST ${url}/signups -H 'content-type: application/json' -d '{"email":"bob@flaky.example"}'
  curl -s ${url}/jobs/<jobId>
  curl -s ${url}/mail
  curl -s ${url}/dead-letters                  # bob's welcome, after 3 refused attempts
  curl -s -X POST ${url}/dead-letters/<id>/retry`);
