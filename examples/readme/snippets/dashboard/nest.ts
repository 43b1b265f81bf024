import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { dashboard } from './setup.js';

@Module({})
class AppModule {}

const app = await NestFactory.create(AppModule);
app.use('/loom', dashboard);
await app.listen(3000);
