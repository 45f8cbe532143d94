import type { NestApplicationOptions } from '@nestjs/common'
import { NestFactory } from '@nestjs/core'
import type { NestExpressApplication } from '@nestjs/platform-express'
import { AppModule } from './app.module.js'

/** The Nest app on Express. `rawBody: true` keeps the exact bytes the webhook signature is checked against. */
export function createApp(options: NestApplicationOptions = {}): Promise<NestExpressApplication> {
  return NestFactory.create<NestExpressApplication>(AppModule, { rawBody: true, ...options })
}
