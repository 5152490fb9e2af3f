import { describe, expect, it } from 'vitest';
import { parseDotenv, parseVariableFlag, VariableError } from '../../src/exec/variables.js';

describe('exec pipeline variables', () => {
  it('reads dotenv files: comments, export, quotes, escapes, multi-line values and trailing comments', () => {
    const text = [
      '# a comment',
      '',
      'PLAIN=value # trailing comment',
      'export EXPORTED=yes',
      "SINGLE='kept $as \\n is'",
      'DOUBLE="line1\\nline2 \\"quoted\\""',
      'MULTI="first',
      'second"',
      'EMPTY=',
      'WITH_EQ=a=b',
    ].join('\r\n');
    expect(Object.fromEntries(parseDotenv(text, '.env'))).toEqual({
      PLAIN: 'value',
      EXPORTED: 'yes',
      SINGLE: 'kept $as \\n is',
      DOUBLE: 'line1\nline2 "quoted"',
      MULTI: 'first\nsecond',
      EMPTY: '',
      WITH_EQ: 'a=b',
    });
  });

  it('names the file and line of a malformed entry or an unclosed quote', () => {
    expect(() => parseDotenv('OK=1\nnot a variable\n', 'ci.env')).toThrow(/ci\.env:2: expected NAME=value/);
    expect(() => parseDotenv('A="open\nstill open\n', 'ci.env')).toThrow(/ci\.env:1: A's value has no closing "/);
    expect(() => parseDotenv('1BAD=x', 'ci.env')).toThrow(VariableError);
  });

  it('splits --variable at the first = and refuses a flag without a valid name', () => {
    expect(parseVariableFlag('URL=http://x/?a=b')).toEqual(['URL', 'http://x/?a=b']);
    expect(parseVariableFlag('EMPTY=')).toEqual(['EMPTY', '']);
    expect(() => parseVariableFlag('NOVALUE')).toThrow(/expected NAME=value/);
    expect(() => parseVariableFlag('has-dash=1')).toThrow(VariableError);
  });
});
