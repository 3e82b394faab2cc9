#!/usr/bin/env node
// lameduck-devkit: local stand-ins for Eureka, Nacos and Envoy, and the rollout lab.
const USAGE = `Usage: lameduck-devkit <command> [options]

Commands:
  eureka     a local Eureka server (REST v2, response caches, delta, leases)
  nacos      a local Nacos naming server (v1 HTTP + UDP push, beats)
  envoy      a local Envoy sidecar: HTTP/1.1 proxy + admin API
  rollout    a Kubernetes rolling update under load, with a loss report
  demo       the rollout as a 2×2 (plain / lameduck consumer × naive / lameduck providers), with a chart

Run 'lameduck-devkit <command> --help' for a command's options.
For development and tests only: production uses real Eureka, Nacos and Envoy.
`

const [command, ...argv] = process.argv.slice(2)
try {
  switch (command) {
    case 'eureka': await (await import('./eureka/index.ts')).runEurekaCli(argv); break
    case 'nacos': await (await import('./nacos/index.ts')).runNacosCli(argv); break
    case 'envoy': process.exitCode = await (await import('./envoy/index.ts')).runEnvoyCli(argv); break
    case 'rollout': process.exitCode = await (await import('./rollout/index.ts')).runRolloutCli(argv); break
    case 'demo':
      await (await import('./rollout/index.ts')).runDemoCli(argv)
      break
    case undefined: case '--help': case '-h': case 'help': process.stdout.write(USAGE); break
    default:
      process.stderr.write(`lameduck-devkit: unknown command '${command}'\n\n${USAGE}`)
      process.exitCode = 2
  }
} catch (err) {
  const { code, message } = (await import('./flags.ts')).cliFailure(command ?? '', err)
  process.stderr.write(message)
  process.exitCode = code
}
