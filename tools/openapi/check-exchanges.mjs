#!/usr/bin/env node
// Validates recorded HTTP exchanges (JSON lines from tests/support/api_recorder.h) against
// docs/openapi.yaml, so the document cannot drift from the service:
//
//   node check-exchanges.mjs OPENAPI.yaml RECORD.jsonl
//
// Each exchange is matched to an operation by its path template and method; its status must be one
// the operation documents, its Content-Type one of that response's media types, its body valid
// against that media type's schema (JSON Schema 2020-12, as OpenAPI 3.1 uses), and every header
// the response marks required present and valid. An exchange no operation takes (an unknown path,
// another method, HEAD, bytes that are no request) is checked against x-fencelock-any-request:
// a 404 only for an unknown path, a 405 only for a known path or a HEAD. Exit 1 if any exchange
// fails (each failure printed), 2 on bad input; prints a summary and the operations never
// exercised.
import { readFileSync } from 'node:fs';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { parse as parseYaml } from 'yaml';

const [openapiPath, recordPath] = process.argv.slice(2);
if (!openapiPath || !recordPath) {
  console.error('usage: check-exchanges.mjs OPENAPI.yaml RECORD.jsonl');
  process.exit(2);
}

const doc = parseYaml(readFileSync(openapiPath, 'utf8'));
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

// Follows a local "$ref" ("#/components/responses/X") to its target.
function deref(node) {
  let seen = 0;
  while (node && typeof node === 'object' && typeof node.$ref === 'string') {
    if (!node.$ref.startsWith('#/') || ++seen > 16) throw new Error(`unsupported $ref ${node.$ref}`);
    node = node.$ref
      .slice(2)
      .split('/')
      .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
      .reduce((at, part) => at?.[part], doc);
    if (node === undefined) throw new Error('dangling $ref');
  }
  return node;
}

// Schemas refer to "#/components/schemas/X"; each compiled schema carries them all as $defs.
function rewriteRefs(value) {
  if (Array.isArray(value)) return value.map(rewriteRefs);
  if (!value || typeof value !== 'object') return value;
  const out = {};
  for (const [key, inner] of Object.entries(value)) {
    out[key] =
      key === '$ref' && typeof inner === 'string' && inner.startsWith('#/components/schemas/')
        ? `#/$defs/${inner.slice('#/components/schemas/'.length)}`
        : rewriteRefs(inner);
  }
  return out;
}
const defs = rewriteRefs(doc.components?.schemas ?? {});
const ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true });
addFormats(ajv);
ajv.addFormat('int64', { type: 'number', validate: Number.isInteger });
ajv.addVocabulary(['example', 'discriminator', 'xml', 'externalDocs']);
const compiled = new Map();
function validatorFor(schema) {
  if (!compiled.has(schema)) compiled.set(schema, ajv.compile({ ...rewriteRefs(schema), $defs: defs }));
  return compiled.get(schema);
}

// The path templates, as regular expressions ("{name}" is one non-empty segment).
const templates = Object.entries(doc.paths).map(([template, item]) => ({
  template,
  item,
  regex: new RegExp(
    '^' +
      template
        .split(/\{[^}]+\}/)
        .map((part) => part.replace(/[.*+?^$()|[\]\\]/g, '\\$&'))
        .join('[^/]+') +
      '$',
  ),
}));

// The path of a request target: without the query, and of an absolute-form target its path.
function pathOf(target) {
  let path = target;
  const absolute = /^https?:\/\/[^/?]*/i.exec(path);
  if (absolute) path = path.slice(absolute[0].length) || '/';
  return path.split('?')[0];
}

function checkHeaders(response, headers, problems) {
  for (const [name, header] of Object.entries(response.headers ?? {})) {
    const spec = deref(header);
    const value = headers[name.toLowerCase()];
    if (value === undefined) {
      if (spec.required) problems.push(`header ${name} is missing`);
      continue;
    }
    const schema = spec.schema ?? {};
    const typed = schema.type === 'integer' && /^-?\d+$/.test(value) ? Number(value) : value;
    const validate = validatorFor(schema);
    if (!validate(typed)) problems.push(`header ${name}: ${ajv.errorsText(validate.errors)}`);
  }
}

function checkBody(response, exchange, problems) {
  const content = response.content;
  const body = exchange.body ?? '';
  if (!content) {
    if (body !== '') problems.push('a body where the document has none');
    return;
  }
  if (exchange.method === 'HEAD') {
    if (body !== '') problems.push('a HEAD answer with a body');
    return;
  }
  const contentType = (exchange.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  const media = content[contentType];
  if (!media) {
    problems.push(`Content-Type "${contentType}" is not one of ${Object.keys(content).join(', ')}`);
    return;
  }
  if (!media.schema) return;
  let value = body;
  if (contentType === 'application/json') {
    try {
      value = JSON.parse(body);
    } catch {
      problems.push(`the body is not JSON: ${body.slice(0, 120)}`);
      return;
    }
  }
  const validate = validatorFor(media.schema);
  if (!validate(value)) {
    problems.push(`body ${ajv.errorsText(validate.errors)}: ${body.slice(0, 300)}`);
  }
}

const anyRequest = doc['x-fencelock-any-request']?.responses ?? {};
const covered = new Map(); // "METHOD template" → Set of statuses seen
const failures = [];
const lines = readFileSync(recordPath, 'utf8').split('\n').filter((line) => line.trim() !== '');
for (const [index, line] of lines.entries()) {
  let exchange;
  try {
    exchange = JSON.parse(line);
  } catch {
    failures.push(`line ${index + 1}: not JSON`);
    continue;
  }
  const method = (exchange.method ?? '').toUpperCase();
  const status = String(exchange.status);
  const path = pathOf(exchange.target ?? '');
  const label = `${exchange.raw ? 'raw ' : ''}${method || '?'} ${exchange.target || '?'} → ${status}`;
  const problems = [];
  const byPath = templates.find((t) => t.regex.test(path));
  const operation =
    byPath && METHODS.includes(method.toLowerCase()) ? byPath.item[method.toLowerCase()] : undefined;
  let response;
  if (operation) {
    const key = `${method} ${byPath.template}`;
    if (!covered.has(key)) covered.set(key, new Set());
    covered.get(key).add(status);
    response =
      operation.responses[status] ??
      operation.responses[`${status[0]}XX`] ??
      (['404', '405'].includes(status) ? undefined : anyRequest[status]);
    if (!response) problems.push(`status ${status} is not documented for ${key}`);
  } else {
    const allowed =
      (status === '404' && !byPath) ||
      (status === '405' && (byPath || method === 'HEAD')) ||
      !['404', '405'].includes(status);
    response = allowed ? anyRequest[status] : undefined;
    if (!response) {
      problems.push(
        `no operation takes it, and ${status} is not an answer x-fencelock-any-request allows here`,
      );
    }
  }
  if (response) {
    response = deref(response);
    checkHeaders(response, exchange.headers ?? {}, problems);
    checkBody(response, exchange, problems);
  }
  if (problems.length) failures.push(`${label}\n    ${problems.join('\n    ')}`);
}

const operations = [];
for (const { template, item } of templates) {
  for (const method of METHODS) if (item[method]) operations.push(`${method.toUpperCase()} ${template}`);
}
const exercised = operations.filter((op) => covered.has(op));
console.log(
  `check-exchanges: ${lines.length} exchanges, ${exercised.length} of ${operations.length} operations covered`,
);
for (const op of exercised) {
  console.log(`  ${op}: ${[...covered.get(op)].sort().join(' ')}`);
}
for (const op of operations.filter((o) => !covered.has(o))) {
  console.log(`  note: ${op} was never exercised`);
}
if (lines.length === 0) failures.push('no exchanges were recorded');
if (failures.length) {
  console.error(`check-exchanges: ${failures.length} exchanges do not match ${openapiPath}:`);
  for (const failure of failures) console.error(`  ${failure}`);
  process.exit(1);
}
console.log('check-exchanges: every exchange matches the document');
