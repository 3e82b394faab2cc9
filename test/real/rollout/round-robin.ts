import { serviceKey, type Discovery } from '@lameduck/core'

/**
 * A plain consumer's pick: round robin over the discovery's list as it stands,
 * no retries (what most Node consumers do). Throws when the list is empty.
 */
export function roundRobin (discovery: Pick<Discovery, 'instances'>, service: string): (path: string) => string {
  let next = 0
  return (path) => {
    const list = discovery.instances(serviceKey(service))
    const target = list[next++ % Math.max(1, list.length)]
    if (target === undefined) throw Object.assign(new Error(`no instance of ${service}`), { code: 'LAMEDUCK_ERR_NO_INSTANCE' })
    return `http://${target.host}:${target.port}${path}`
  }
}
