// A small validator for Kubernetes objects against the published schemas in
// test/fixtures/schemas: the API's OpenAPI v2 definitions (built-in kinds) and
// CRDs' openAPIV3Schema (Istio, Gateway API, Envoy Gateway). It checks what the
// API server's strict field validation rejects: unknown fields, wrong types,
// missing required fields, enums, patterns, bounds and oneOf/anyOf/allOf/not.
import { readFileSync } from 'node:fs'

type Schema = Record<string, any>

const load = (name: string): any => JSON.parse(readFileSync(new URL(`../fixtures/schemas/${name}`, import.meta.url), 'utf8'))
const K8S = load('kubernetes-1.34.json') as { definitions: Record<string, Schema> }
const CRDS = load('crds.json') as Record<string, { schema: Schema }>

const OBJECT_META = 'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta'
// Types whose JSON form is a number or a string.
const NUMBER_OR_STRING = new Set(['io.k8s.apimachinery.pkg.api.resource.Quantity', 'io.k8s.apimachinery.pkg.util.intstr.IntOrString'])

export interface SchemaError { path: string, message: string }

/** The schema for apiVersion/kind, or undefined when the fixtures hold none. */
export function schemaFor (apiVersion: string, kind: string): { schema: Schema, crd: boolean } | undefined {
  const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') as [string, string] : ['', apiVersion]
  for (const [name, def] of Object.entries(K8S.definitions)) {
    const gvk = def['x-kubernetes-group-version-kind'] as Array<{ group: string, version: string, kind: string }> | undefined
    if (gvk?.some((g) => g.group === group && g.version === version && g.kind === kind) === true) return { schema: { $ref: `#/definitions/${name}` }, crd: false }
  }
  const crd = CRDS[`${group}/${version}/${kind}`]
  return crd === undefined ? undefined : { schema: crd.schema, crd: true }
}

/** Validates one object; an object of a kind without a schema is one error. */
export function validateObject (value: unknown): SchemaError[] {
  const errors: SchemaError[] = []
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return [{ path: '', message: 'not an object' }]
  const o = value as Record<string, unknown>
  const found = schemaFor(String(o.apiVersion), String(o.kind))
  if (found === undefined) return [{ path: '', message: `no schema for ${String(o.apiVersion)} ${String(o.kind)}` }]
  if (found.crd) {
    // apiVersion, kind and metadata are the API server's own for every CRD (ObjectMeta),
    // whatever the CRD's schema says of them.
    const { apiVersion: _a, kind: _k, metadata, ...rest } = o
    check(found.schema, rest, '', errors)
    check({ $ref: `#/definitions/${OBJECT_META}` }, metadata, '.metadata', errors)
  } else {
    check(found.schema, value, '', errors)
  }
  return errors
}

function resolve (schema: Schema): { schema: Schema, name?: string } {
  let name: string | undefined
  while (typeof schema.$ref === 'string') {
    name = schema.$ref.replace('#/definitions/', '')
    const next = K8S.definitions[name!]
    if (next === undefined) throw new Error(`unresolved ${schema.$ref}`)
    schema = next
  }
  return name === undefined ? { schema } : { schema, name }
}

function typeOf (v: unknown): string {
  if (v === null) return 'null'
  if (Array.isArray(v)) return 'array'
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number'
  return typeof v
}

function check (raw: Schema, value: unknown, path: string, errors: SchemaError[]): void {
  const { schema, name } = resolve(raw)
  if (value === null) {
    // JSON null is "unset" to the API server's decoder for optional fields.
    return
  }
  const t = typeOf(value)
  const intOrString = schema['x-kubernetes-int-or-string'] === true || schema.format === 'int-or-string' || (name !== undefined && NUMBER_OR_STRING.has(name))
  if (intOrString) {
    if (t !== 'string' && t !== 'integer' && !(name !== undefined && NUMBER_OR_STRING.has(name) && t === 'number')) errors.push({ path, message: `expected an integer or a string, got ${t}` })
  } else if (typeof schema.type === 'string') {
    const ok = schema.type === t || (schema.type === 'number' && t === 'integer')
    if (!ok) {
      errors.push({ path, message: `expected ${schema.type}, got ${t} (${JSON.stringify(value).slice(0, 40)})` })
      return
    }
  }
  if (Array.isArray(schema.enum) && !schema.enum.some((e: unknown) => e === value)) errors.push({ path, message: `must be one of ${schema.enum.map((e: unknown) => JSON.stringify(e)).join(', ')} (got ${JSON.stringify(value)})` })
  if (typeof value === 'string') {
    if (typeof schema.maxLength === 'number' && value.length > schema.maxLength) errors.push({ path, message: `longer than ${schema.maxLength}` })
    if (typeof schema.minLength === 'number' && value.length < schema.minLength) errors.push({ path, message: `shorter than ${schema.minLength}` })
    if (typeof schema.pattern === 'string') {
      let re: RegExp | undefined
      try { re = new RegExp(schema.pattern, 'u') } catch { re = undefined }
      if (re !== undefined && !re.test(value)) errors.push({ path, message: `does not match ${schema.pattern} (got ${JSON.stringify(value)})` })
    }
  }
  if (typeof value === 'number') {
    if (typeof schema.minimum === 'number' && value < schema.minimum) errors.push({ path, message: `below ${schema.minimum}` })
    if (typeof schema.maximum === 'number' && value > schema.maximum) errors.push({ path, message: `above ${schema.maximum}` })
  }
  if (Array.isArray(value)) {
    if (typeof schema.maxItems === 'number' && value.length > schema.maxItems) errors.push({ path, message: `more than ${schema.maxItems} items` })
    if (typeof schema.minItems === 'number' && value.length < schema.minItems) errors.push({ path, message: `fewer than ${schema.minItems} items` })
    if (schema.items !== undefined) value.forEach((item, i) => { check(schema.items, item, `${path}[${i}]`, errors) })
  }
  if (t === 'object') {
    const obj = value as Record<string, unknown>
    const props = schema.properties as Record<string, Schema> | undefined
    for (const r of Array.isArray(schema.required) ? schema.required as string[] : []) {
      if (obj[r] === undefined) errors.push({ path: `${path}.${r}`, message: 'required' })
    }
    for (const [k, v] of Object.entries(obj)) {
      if (v === undefined) continue
      if (props?.[k] !== undefined) check(props[k], v, `${path}.${k}`, errors)
      else if (typeof schema.additionalProperties === 'object') check(schema.additionalProperties, v, `${path}.${k}`, errors)
      else if (props !== undefined && schema['x-kubernetes-preserve-unknown-fields'] !== true && schema.additionalProperties !== true) errors.push({ path: `${path}.${k}`, message: 'unknown field' })
    }
  }
  const sub = (s: Schema): number => { const e: SchemaError[] = []; check(s, value, path, e); return e.length }
  if (Array.isArray(schema.allOf)) for (const s of schema.allOf) check(s, value, path, errors)
  if (Array.isArray(schema.anyOf) && !schema.anyOf.some((s: Schema) => sub(s) === 0)) errors.push({ path, message: 'matches none of anyOf' })
  if (Array.isArray(schema.oneOf) && schema.oneOf.filter((s: Schema) => sub(s) === 0).length !== 1) errors.push({ path, message: 'must match exactly one of oneOf' })
  if (schema.not !== undefined && sub(schema.not) === 0) errors.push({ path, message: 'matches a forbidden form (not)' })
}
