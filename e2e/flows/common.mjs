import assert from "node:assert/strict";
import { BASE_URL, expectAccessible } from "../harness.mjs";

export const PASSWORD = "correct horse battery staple";

/** @typedef {import("playwright-core").Page} Page */

export const uniqueEmail = (/** @type {string} */ tag) =>
  `${tag}-${Math.random().toString(36).slice(2, 10)}@example.com`;

/** Opens an invitation link, sets the password, and lands signed in on the overview. @param {Page} page @param {string} invitationUrl */
export async function acceptInvitation(page, invitationUrl) {
  await page.goto(invitationUrl);
  await page.getByRole("heading", { name: "Set your password" }).waitFor();
  await expectAccessible(page, "set password");
  await page.getByLabel("New password", { exact: true }).fill(PASSWORD);
  await page.getByLabel("Repeat the new password").fill(PASSWORD);
  await page.getByRole("button", { name: "Set password and sign in" }).click();
  await page.waitForURL(`${BASE_URL}/dashboard`);
  await page.getByRole("heading", { name: "Overview" }).waitFor();
}

/** @param {Page} page @param {string} email */
export async function signIn(page, email) {
  await page.goto("/dashboard/sign-in");
  await expectAccessible(page, "sign in");
  await page.getByLabel("Email", { exact: true }).fill(email);
  await page.getByLabel("Password", { exact: true }).fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL(`${BASE_URL}/dashboard`);
}

/** The session cookie the browser kept: proves `__Host-` + Secure cookies are stored over http://127.0.0.1. */
/** @param {import("playwright-core").BrowserContext} context */
export async function sessionCookie(context) {
  const cookie = (await context.cookies()).find((c) => c.name === "__Host-session");
  assert.ok(cookie, "the browser stored the __Host-session cookie");
  assert.equal(cookie.secure, true);
  assert.equal(cookie.httpOnly, true);
  assert.equal(cookie.sameSite, "Lax");
  assert.equal(cookie.path, "/");
  return cookie;
}

export const callApi = (/** @type {string} */ path, /** @type {string} */ key) =>
  fetch(`${BASE_URL}/api/v1${path}`, { headers: { Authorization: `Bearer ${key}` } });

/**
 * Whether the page scrolls sideways, and (for the failure message) what sticks out past the screen's
 * right edge: a wide table's cells do, inside their own scrolling box, without making the page wider.
 * @param {import("playwright-core").Page} page
 */
export const sidewaysOverflow = (page) =>
  page.evaluate(() => ({
    wider: document.documentElement.scrollWidth > window.innerWidth,
    sticking: [...document.querySelectorAll("body *")]
      .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1)
      .map((e) => `${e.tagName.toLowerCase()}${e.className ? `.${e.className}` : ""}`)
      .slice(0, 20),
  }));
