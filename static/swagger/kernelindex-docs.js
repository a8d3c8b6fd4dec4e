// Starts Swagger UI on /api/docs. A file of its own because the Content-Security-Policy
// allows no inline script; the OpenAPI document's URL comes from the page's markup.
(function () {
  "use strict";
  var root = document.getElementById("swagger-ui");
  if (!root || !window.SwaggerUIBundle) return;
  window.ui = window.SwaggerUIBundle({
    url: root.dataset.openapiUrl,
    domNode: root,
    deepLinking: true,
    // The default validator badge would call an outside service.
    validatorUrl: null,
    presets: [window.SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    defaultModelsExpandDepth: 0
  });
})();
