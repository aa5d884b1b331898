// /docs: the OpenAPI 3.1 schema in Swagger UI 5 (from the fastapi-offline package; 4.x cannot read 3.1).
// With an API key on the server, the schema is fetched with the key this tab keeps (the demo page's session
// storage entry; asked for once, like the demo page does), and every "Try it out" request carries it.

const KEY = "rag-api-key";
const $ = (id) => document.getElementById(id);

function askForKey(message) {
  return new Promise((resolve) => {
    const dialog = $("key-dialog");
    $("key-error").textContent = message;
    $("key-input").value = "";
    dialog.addEventListener("close", () => {
      sessionStorage.setItem(KEY, $("key-input").value.trim());
      resolve();
    }, {once: true});
    dialog.showModal();
  });
}

async function schema() {
  for (;;) {
    const key = sessionStorage.getItem(KEY);
    const response = await fetch("/openapi.json", {headers: key ? {Authorization: `Bearer ${key}`} : {}});
    if (response.status !== 401) {
      if (!response.ok) throw new Error(`${response.status} ${response.statusText}`);
      return response.json();
    }
    await askForKey(key ? "That key was refused; try again." : "");
  }
}

async function main() {
  const spec = await schema();
  window.ui = window.SwaggerUIBundle({
    spec,
    dom_id: "#swagger-ui",
    deepLinking: true,
    requestInterceptor: (request) => {
      const key = sessionStorage.getItem(KEY);
      if (key) request.headers.Authorization = `Bearer ${key}`;
      return request;
    },
  });
  $("docs-status").textContent = "";
}

main().catch((error) => { $("docs-status").textContent = `Could not load the API description: ${error.message}`; });
