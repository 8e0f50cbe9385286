// Placeholder until the console page lands: reads config.json and shows the API it would call.
"use strict";
fetch("config.json").then((r) => r.json()).then((config) => {
  const line = document.createElement("p");
  line.textContent = "API: " + config.api_url;
  document.getElementById("app").appendChild(line);
});
