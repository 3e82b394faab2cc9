import { Controller, Get, Query } from '@nestjs/common'
import { HelloService } from './hello.service.ts'

@Controller()
export class HelloController {
  constructor (private readonly hello: HelloService) {}

  /** GET /hello?ms=N answers after N ms (to watch the in-flight wait at the end of a drain). */
  @Get('hello')
  async get (@Query('ms') ms?: string): Promise<{ hello: string }> {
    const wait = Math.min(Number(ms ?? 0) || 0, 5_000)
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
    return this.hello.greet()
  }
}
