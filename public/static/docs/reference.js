// Renders the OpenAPI document of this deployment with the vendored Swagger UI.
// Everything comes from this origin: the document, the UI and "Try it out" requests.
window.ui = SwaggerUIBundle({
  url: "/api/v1/openapi.json",
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
});
