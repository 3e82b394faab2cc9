import { Injectable, type OnApplicationShutdown } from '@nestjs/common'

@Injectable()
export class HelloService implements OnApplicationShutdown {
  greet (): { hello: string } {
    return { hello: 'world' }
  }

  /** Runs once lameduck has drained the app and closes it (closeApp: () => app.close()). */
  onApplicationShutdown (): void {
    console.log('nest: application shutdown')
  }
}
