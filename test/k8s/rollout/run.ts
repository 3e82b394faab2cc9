// One rollout of the devkit lab on the `kubernetes` path of a real control plane (path-kubernetes.ts).
import { runRollout, type RolloutOptions, type RolloutReport } from '@lameduck/devkit'
import type { ControlPlane } from '../helpers/control-plane.ts'
import { kubernetesPath, type KubernetesPathStats } from './path-kubernetes.ts'

let runs = 0

export async function runKubernetesRollout (cp: ControlPlane, options: RolloutOptions): Promise<{ report: RolloutReport, stats: KubernetesPathStats }> {
  const stats: KubernetesPathStats = { created: 0, deleted: 0, events: () => 0 }
  const path = kubernetesPath(cp, `lab-${process.pid}-${++runs}`, stats)
  const report = await runRollout({ registry: 'none', scale: 0.1, ...options, path })
  return { report, stats }
}
