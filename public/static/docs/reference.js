// Renders the OpenAPI document of this deployment with the vendored Swagger UI.
// Everything comes from this origin: the document, the UI and "Try it out" requests.
//
// "Try it out" on POST /messages: the document's examples are placeholders, and sending them as
// they are fails (403 for the example number; the second run of the example Idempotency-Key with
// an edited body is a 409). So the page fills what it can know:
// - the Idempotency-Key is a fresh UUID for every run: one key means one message (a retry with
//   the same key and body answers the original jobId and sends nothing; another body is a 409);
// - once authorized, the example channelNumberId becomes your first number (GET /channel-numbers).
var EXAMPLE_KEY = "6f1c2a7e-3b0d-4e59-9d7b-2f3c1a9e8b10";
var EXAMPLE_NUMBER = "6f1c2c4e-8a57-4b5e-9d0e-2f8c9a1b7d33";
// Both versions' sends (the page shows one version's document at a time: /docs?version=v2).
var SEND_PATHS = ["/api/v1/messages", "/api/v2/messages"];

// The first connected number the key can send from, looked up once per key.
var firstNumber = {};
function numberFor(auth) {
  if (!firstNumber[auth]) {
    firstNumber[auth] = fetch("/api/v1/channel-numbers?limit=1", { headers: { Authorization: auth } })
      .then(function (res) {
        return res.ok ? res.json() : { data: [] };
      })
      .then(function (page) {
        return page.data && page.data[0] ? page.data[0].id : null;
      })
      .catch(function () {
        return null;
      });
  }
  return firstNumber[auth];
}

function prepareSend(req) {
  var path = new URL(req.url, location.origin).pathname;
  if (req.method !== "POST" || SEND_PATHS.indexOf(path) < 0) return req;
  // The example key (or none): a new one for this run. A key you typed yourself is kept (to try a retry).
  var key = req.headers["Idempotency-Key"] || req.headers["idempotency-key"];
  if (!key || key === EXAMPLE_KEY) {
    delete req.headers["idempotency-key"];
    req.headers["Idempotency-Key"] = crypto.randomUUID();
  }
  var auth = req.headers.Authorization;
  if (!auth || typeof req.body !== "string" || req.body.indexOf(EXAMPLE_NUMBER) < 0) return req;
  return numberFor(auth).then(function (id) {
    if (id) req.body = req.body.split(EXAMPLE_NUMBER).join(id);
    return req;
  });
}

// The page names the version's document (data-document); v1's if it names none.
var reference = document.getElementById("reference");
var documentUrl = (reference && reference.dataset.document) || "/api/v1/openapi.json";

window.ui = SwaggerUIBundle({
  url: documentUrl,
  dom_id: "#reference",
  deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis],
  layout: "BaseLayout",
  // The default validator badge calls an external service: off.
  validatorUrl: null,
  // Show every schema resolved, with its example, and the request duration of "Try it out".
  defaultModelRendering: "example",
  defaultModelsExpandDepth: 1,
  displayRequestDuration: true,
  showExtensions: false,
  tryItOutEnabled: false,
  persistAuthorization: false,
  requestInterceptor: prepareSend,
});
