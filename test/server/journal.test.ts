/** The state journal's framing (`serve --data-dir`): whole records load, a torn or damaged tail stops the read. */
import { describe, expect, it } from 'vitest';
import { decodeRecords, encodeRecord } from '../../src/server/state/journal.js';

const records = [{ t: 'runner', id: 1 }, { t: 'build', id: 2, text: 'ünïcode' }, { t: 'runner-deleted', id: 1 }];
const whole = Buffer.concat(records.map(encodeRecord));

describe('the state journal reader', () => {
  it('reads back every whole record', () => {
    expect(decodeRecords(whole)).toEqual({ records, validBytes: whole.byteLength });
  });

  it('stops before a record cut anywhere in its header or payload', () => {
    const lastStart = whole.byteLength - encodeRecord(records[2]).byteLength;
    for (let cut = lastStart + 1; cut < whole.byteLength; cut++) {
      expect(decodeRecords(whole.subarray(0, cut))).toEqual({ records: records.slice(0, 2), validBytes: lastStart });
    }
  });

  it('stops at a record whose checksum does not match its bytes', () => {
    const damaged = Buffer.from(whole);
    const secondPayload = encodeRecord(records[0]).byteLength + 8 + 3;
    damaged[secondPayload] = (damaged[secondPayload] ?? 0) ^ 0xff;
    expect(decodeRecords(damaged).records).toEqual(records.slice(0, 1));
  });

  it('treats an absurd length as a torn header, not a reason to allocate', () => {
    const header = Buffer.alloc(8);
    header.writeUInt32LE(0xffffffff, 0);
    expect(decodeRecords(Buffer.concat([whole, header, Buffer.from('xx')]))).toEqual({ records, validBytes: whole.byteLength });
  });
});
