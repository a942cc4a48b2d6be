// Starts the bundled Swagger UI on the served OpenAPI document (no inline script, no CDN).
"use strict";
window.addEventListener("DOMContentLoaded", () => {
  window.SwaggerUIBundle({
    url: "/api/v1/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    presets: [window.SwaggerUIBundle.presets.apis],
  });
});
