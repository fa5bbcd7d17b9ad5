import { describe, expect, it } from "vitest";
import { fromBase64, randomBytes, toBase64 } from "../../../src/lib/crypto";
import { currentPrefix, keyRing, open, seal } from "../../../src/lib/secret-box";

const newKey = () => toBase64(randomBytes(32));

/** A v1 value: the master key itself, AES-GCM without additional data (what was stored before rotation). */
async function sealV1(masterBase64: string, plaintext: string): Promise<string> {
  const key = await crypto.subtle.importKey("raw", fromBase64(masterBase64), "AES-GCM", false, ["encrypt"]);
  const iv = randomBytes(12);
  const ct = await crypto.subtle.encrypt({ name: "AES-GCM", iv }, key, new TextEncoder().encode(plaintext));
  return `v1.${toBase64(iv)}.${toBase64(ct)}`;
}

describe("secrets sealed at rest", () => {
  it("open for their purpose and row, under the current key, whose public id prefixes them", async () => {
    const env = { CREDENTIALS_ENCRYPTION_KEY: newKey() };
    const sealed = await seal(env, "webhook-secret", "wh_1", "whsec_abc");
    expect(sealed.startsWith(await currentPrefix(env))).toBe(true);
    expect(sealed).not.toContain("whsec_abc");
    expect(await open(env, "webhook-secret", "wh_1", sealed)).toBe("whsec_abc");
    // Sealing twice gives two values (a fresh IV each time).
    expect(await seal(env, "webhook-secret", "wh_1", "whsec_abc")).not.toBe(sealed);
  });

  it("never open for another row or another purpose: a copied ciphertext is useless", async () => {
    const env = { CREDENTIALS_ENCRYPTION_KEY: newKey() };
    const sealed = await seal(env, "webhook-secret", "wh_1", "whsec_abc");
    await expect(open(env, "webhook-secret", "wh_2", sealed)).rejects.toThrow();
    await expect(open(env, "upstream-credentials", "wh_1", sealed)).rejects.toThrow();
  });

  it("keep opening after a rotation while the old key is in the ring, and name the key when it is not", async () => {
    const oldKey = newKey();
    const sealed = await seal({ CREDENTIALS_ENCRYPTION_KEY: oldKey }, "upstream-credentials", "n_1", "token");
    const rotated = {
      CREDENTIALS_ENCRYPTION_KEY: newKey(),
      CREDENTIALS_ENCRYPTION_KEYS_OLD: ` ${newKey()}, ${oldKey} ,`,
    };
    expect(await open(rotated, "upstream-credentials", "n_1", sealed)).toBe("token");
    expect(sealed.startsWith(await currentPrefix(rotated))).toBe(false);
    await expect(open({ CREDENTIALS_ENCRYPTION_KEY: newKey() }, "upstream-credentials", "n_1", sealed)).rejects.toThrow(
      /neither CREDENTIALS_ENCRYPTION_KEY nor in CREDENTIALS_ENCRYPTION_KEYS_OLD/,
    );
  });

  it("v1 values open with whichever key of the ring sealed them", async () => {
    const oldKey = newKey();
    const v1 = await sealV1(oldKey, "legacy");
    const ring = { CREDENTIALS_ENCRYPTION_KEY: newKey(), CREDENTIALS_ENCRYPTION_KEYS_OLD: oldKey };
    expect(await open(ring, "upstream-credentials", "any-row", v1)).toBe("legacy");
    await expect(open({ CREDENTIALS_ENCRYPTION_KEY: newKey() }, "webhook-secret", "r", v1)).rejects.toThrow(
      /no configured key opens/,
    );
  });

  it("refuse a value of no known shape, and a master key that is not 32 bytes of base64", async () => {
    const env = { CREDENTIALS_ENCRYPTION_KEY: newKey() };
    await expect(open(env, "webhook-secret", "r", "plain-text")).rejects.toThrow(/Unrecognised/);
    await expect(open(env, "webhook-secret", "r", "v2.a.b")).rejects.toThrow(/Unrecognised/);
    await expect(keyRing({ CREDENTIALS_ENCRYPTION_KEY: toBase64(randomBytes(16)) })).rejects.toThrow(/32 bytes/);
    await expect(
      keyRing({ CREDENTIALS_ENCRYPTION_KEY: newKey(), CREDENTIALS_ENCRYPTION_KEYS_OLD: "!!!" }),
    ).rejects.toThrow(/CREDENTIALS_ENCRYPTION_KEYS_OLD/);
  });
});
