import jwt from 'jsonwebtoken';
import { type Bike, newBike, useApi } from './helpers';

/**
 * docs/reference/requests-and-answers.md#bodies: a body is JSON for application/json and every application/*+json, form
 * fields for application/x-www-form-urlencoded, decoded from its charset; any other non-empty
 * body, or one in a charset the service cannot decode, is refused, never silently ignored.
 */
describe('request bodies: media types and charsets', () => {
  const api = useApi();

  /** A create body with the given title, in `charset`, as the bytes a client in that charset sends. */
  function encoded(text: string, encode: (json: string) => Buffer): Buffer {
    return encode(JSON.stringify(newBike({ title: text })));
  }

  describe('JSON media types', () => {
    it.each([
      'application/merge-patch+json',
      'application/problem+json',
      'application/json-patch+json',
      'application/vnd.api+json',
      'application/merge-patch+json; charset=utf-8',
    ])('a PATCH sent as %p is read as JSON and applied', async (contentType) => {
      const bike = await api.create();
      const res = await api.request('PATCH', `/bikes/${bike.id}`, { raw: '{"vendor":"Changed"}', contentType });
      expect(res.status).toBe(200);
      expect(res.json()).toEqual({ ...bike, vendor: 'Changed' });
      expect(await api.find(bike.id)).toEqual({ ...bike, vendor: 'Changed' });
    });

    it('a create sent as application/vnd.api+json is read as JSON', async () => {
      const fields = newBike();
      const res = await api.request('POST', '/bikes/', {
        raw: JSON.stringify(fields),
        contentType: 'application/vnd.api+json',
      });
      expect(res.status).toBe(200);
      expect(res.json()).toMatchObject(fields);
    });
  });

  describe('any other media type', () => {
    it.each([
      'text/plain',
      'text/json',
      'application/csp-report',
      'application/xml',
      'application/jsonp',
      'application/x-json',
      'multipart/form-data; boundary=x',
      'application/json; charset', // malformed
      'application/json, text/plain', // not one media type
    ])(
      'with a non-empty body as %p: 400 on create, patch and the token endpoint, 404 on replace; nothing changes',
      async (contentType) => {
        const bike = await api.create();
        const title = `Refused ${contentType}`;
        const raw = JSON.stringify({ ...newBike({ title }), id: bike.id, handle: 'refused', username: 'ann' });
        expect((await api.request('POST', '/bikes/', { raw, contentType })).status).toBe(400);
        expect((await api.request('PATCH', `/bikes/${bike.id}`, { raw, contentType })).status).toBe(400);
        expect((await api.request('PUT', `/bikes/${bike.id}`, { raw, contentType })).status).toBe(404);
        expect((await api.request('POST', '/api/user', { raw, contentType, token: null })).status).toBe(400);
        expect(await api.find(bike.id)).toEqual(bike);
        expect(await api.search(title)).toEqual([]);
      },
    );

    it.each(['text/plain', 'application/octet-stream', 'application/json'])(
      'an empty body as %p counts as absent: 400 on create, the bike unchanged on patch, a token without username',
      async (contentType) => {
        const bike = await api.create();
        expect((await api.request('POST', '/bikes/', { raw: '', contentType })).status).toBe(400);
        const patched = await api.request('PATCH', `/bikes/${bike.id}`, { raw: '', contentType });
        expect(patched.status).toBe(200);
        expect(patched.json()).toEqual(bike);
        expect((await api.request('PUT', `/bikes/${bike.id}`, { raw: '', contentType })).status).toBe(404);
        const token = await api.request('POST', '/api/user', { raw: '', contentType, token: null });
        expect(token.status).toBe(200);
        expect(jwt.decode(token.json<{ token: string }>().token)).not.toHaveProperty('username');
      },
    );
  });

  describe('charsets', () => {
    const latin1 = (json: string) => Buffer.from(json, 'latin1');
    const utf16le = (json: string) => Buffer.from(json, 'utf16le');
    const utf16be = (json: string) => Buffer.from(json, 'utf16le').swap16();
    const withBom = (encode: (json: string) => Buffer) => (json: string) =>
      Buffer.concat([encode('\ufeff'), encode(json)]);

    it.each([
      ['utf-8', 'Café Ünïcode 🚲', (json: string) => Buffer.from(json)],
      ['UTF-8', 'Café Ünïcode 🚲', (json: string) => Buffer.from(json)],
      ['latin1', 'Café Latin', latin1],
      ['iso-8859-1', 'Café Latin ÿ', latin1],
      ['ISO_8859-1', 'Crème brûlée', latin1],
      ['windows-1252', 'Café € Bike', (json: string) => Buffer.from(json.replace('€', '\x80'), 'latin1')],
      ['utf-16le', 'Café Ünïcode 🚲', utf16le],
      ['utf-16be', 'Café Ünïcode 🚲', utf16be],
      ['utf-16', 'Café with a BOM 🚲', withBom(utf16le)],
      ['utf-16', 'Café big-endian with a BOM', withBom(utf16be)],
    ])('a body in charset=%s is decoded: %p is stored and read back as sent', async (charset, title, encode) => {
      const res = await api.request('POST', '/bikes/', {
        raw: encoded(title, encode),
        contentType: `application/json; charset=${charset}`,
      });
      expect(res.status).toBe(200);
      const created = res.json<Bike>();
      expect(created.title).toBe(title);
      expect(created.handle).toBe(title.replaceAll(' ', '-').toLowerCase());
      expect(await api.find(created.id)).toEqual(created);
    });

    it('a form in ISO-8859-1 is decoded, its raw bytes and its percent-escapes alike', async () => {
      const bike = await api.create();
      const res = await api.request('PATCH', `/bikes/${bike.id}`, {
        raw: Buffer.from('vendor=Caf\xe9+%26+Co&description=cr%E8me', 'latin1'),
        contentType: 'application/x-www-form-urlencoded; charset=iso-8859-1',
      });
      expect(res.status).toBe(200);
      expect(await api.find(bike.id)).toEqual({ ...bike, vendor: 'Café & Co', description: 'crème' });
    });

    it('the token endpoint decodes the username from its charset', async () => {
      const res = await api.request('POST', '/api/user', {
        raw: Buffer.from('{"username":"Zo\xeb"}', 'latin1'),
        contentType: 'application/json; charset=latin1',
        token: null,
      });
      expect(res.status).toBe(200);
      expect(jwt.decode(res.json<{ token: string }>().token)).toMatchObject({ username: 'Zoë' });
    });

    it.each([
      ['an unknown charset', 'application/json; charset=x-no-such-charset', Buffer.from('{"title":"Unknown"}')],
      ['an encoding that is not a charset', 'application/json; charset=base64', Buffer.from('eyJ0aXRsZSI6IngifQ==')],
      ['a byte windows-1252 does not define', 'application/json; charset=windows-1252', latin1('{"title":"\x81"}')],
    ])(
      'a body in %s is refused: 400 on create, patch and the token endpoint, 404 on replace; nothing changes',
      async (_label, contentType, raw) => {
        const bike = await api.create();
        expect((await api.request('POST', '/bikes/', { raw, contentType })).status).toBe(400);
        expect((await api.request('PATCH', `/bikes/${bike.id}`, { raw, contentType })).status).toBe(400);
        expect((await api.request('PUT', `/bikes/${bike.id}`, { raw, contentType })).status).toBe(404);
        expect((await api.request('POST', '/api/user', { raw, contentType, token: null })).status).toBe(400);
        expect(await api.find(bike.id)).toEqual(bike);
      },
    );
  });
});
