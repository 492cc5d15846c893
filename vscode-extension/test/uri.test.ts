import { strict as assert } from "node:assert";
import { test } from "node:test";
import { targetUri, uriTarget } from "../src/documents";
import { SCHEME, base64UrlDecode, base64UrlEncode, fromUriParts, safeLabel, titleFor, toUriParts } from "../src/uri";
import { Uri } from "./vscode-stub";

const NASTY = [
  "plain",
  "",
  "with space",
  "a/b/../c",
  "q?x=1&y=2",
  "hash#frag",
  "pct%41%zz",
  "back\\slash",
  "new\nline\ttab",
  "ünïcödé—日本語",
  "emoji 🧪🔥",
  '"quoted"',
  "..",
  "dsh-session:/event/x.jsonc?abc",
  "+/=",
];

test("round trip of any session id and seq through a real URI string", () => {
  for (const sessionId of NASTY) {
    for (const target of [
      { kind: "event" as const, sessionId, seq: 0 },
      { kind: "event" as const, sessionId, seq: 9007199254740991 },
      { kind: "surface" as const, sessionId },
      { kind: "log" as const, sessionId },
    ]) {
      const uri = targetUri(target);
      assert.equal(uri.scheme, SCHEME);
      const reparsed = Uri.parse(uri.toString());
      assert.deepEqual(uriTarget(reparsed as never), target, `id ${JSON.stringify(sessionId)}`);
    }
  }
});

test("the query carries only base64url characters; the path is a readable title", () => {
  const parts = toUriParts({ kind: "event", sessionId: "a/b?c#d e", seq: 12 });
  assert.match(parts.query, /^[A-Za-z0-9_-]+$/);
  assert.equal(parts.path, "/a_b_c_d_e event 12.jsonc");
  assert.equal(titleFor({ kind: "surface", sessionId: "x" }), "x surface.jsonc");
  assert.equal(titleFor({ kind: "log", sessionId: "x" }), "x log.jsonc");
  assert.equal(safeLabel(""), "session");
  assert.equal(safeLabel("..."), "session");
  assert.equal(safeLabel("x".repeat(100)).length, 40);
});

test("base64url encodes UTF-8 without padding and decodes with or without it", () => {
  for (const s of NASTY) {
    const enc = base64UrlEncode(s);
    assert.doesNotMatch(enc, /[+/=]/);
    assert.equal(base64UrlDecode(enc), s);
    assert.equal(base64UrlDecode(enc + "=".repeat((4 - (enc.length % 4)) % 4)), s);
  }
  assert.throws(() => base64UrlDecode("not base64!"));
});

test("malformed URIs are rejected with a clear message", () => {
  const bad = (query: string) => () => fromUriParts({ scheme: SCHEME, query });
  assert.throws(bad(""), /malformed/);
  assert.throws(bad("!!!"), /malformed/);
  assert.throws(bad(base64UrlEncode("[]")), /malformed/);
  assert.throws(bad(base64UrlEncode('{"k":"event","s":"a"}')), /malformed/);
  assert.throws(bad(base64UrlEncode('{"k":"event","s":"a","q":-1}')), /malformed/);
  assert.throws(bad(base64UrlEncode('{"k":"event","s":"a","q":1.5}')), /malformed/);
  assert.throws(bad(base64UrlEncode('{"k":"nope","s":"a"}')), /malformed/);
  assert.throws(() => fromUriParts({ scheme: "file", query: "" }), /not a dsh-session/);
  assert.throws(() => toUriParts({ kind: "event", sessionId: "a" }), /seq/);
});
