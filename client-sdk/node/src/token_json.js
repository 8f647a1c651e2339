// Reads fencelockd's JSON answers with 64-bit tokens intact.
//
// Tokens are unsigned 64-bit integers sent as JSON numbers. JSON.parse turns every number into a
// double, so a token above 2^53 would silently change (2^53 + 1 reads as 2^53) — and a fencing
// token that is off by one fences the wrong writes. Before parsing, the values of the fields
// "token" and "last_token" are therefore quoted, taken as their exact digits, and turned into
// BigInt. Only a key at the object level can match: inside a JSON string every quote is escaped
// (\"), so a message text can never look like `"token":`. A lock set's "tokens" object (name →
// token) is read the same way: every value in it is quoted and turned into BigInt.

const tokenField = /"(token|last_token)"(\s*):(\s*)(-?[0-9][0-9.eE+-]*)/g;
const tokensObject = /"tokens"(\s*):(\s*)\{([^{}]*)\}/g;
const memberNumber = /("(?:[^"\\]|\\.)*")(\s*):(\s*)(-?[0-9][0-9.eE+-]*)/g;

export const maxToken = (1n << 64n) - 1n;

// Parses `text`; the fields "token" and "last_token", and the values of "tokens", come back as
// BigInt (or null).
export function parseWithTokens(text) {
  const quoted = text
    .replace(tokenField, (_, key, s1, s2, digits) => `"${key}"${s1}:${s2}"${digits}"`)
    .replace(tokensObject, (_, s1, s2, members) => `"tokens"${s1}:${s2}{${
      members.replace(memberNumber, (__, key, t1, t2, digits) => `${key}${t1}:${t2}"${digits}"`)}}`);
  const value = JSON.parse(quoted);
  convert(value);
  return value;
}

function convert(object) {
  if (object === null || typeof object !== 'object') return;
  for (const key of Object.keys(object)) {
    const field = object[key];
    if ((key === 'token' || key === 'last_token') && typeof field === 'string') {
      object[key] = exactToken(key, field);
    } else if (key === 'tokens' && field !== null && typeof field === 'object' && !Array.isArray(field)) {
      for (const name of Object.keys(field)) {
        if (typeof field[name] !== 'string') throw new SyntaxError(`"tokens" holds a non-integer`);
        field[name] = exactToken(`tokens.${name}`, field[name]);
      }
    } else {
      convert(field);
    }
  }
}

function exactToken(what, digits) {
  if (!/^[0-9]{1,20}$/.test(digits)) throw new SyntaxError(`"${what}" is not a non-negative integer`);
  const token = BigInt(digits);
  if (token > maxToken) throw new SyntaxError(`"${what}" is above 2^64 - 1`);
  return token;
}
