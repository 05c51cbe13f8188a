// The service worker: Canopy's Web Push messages say only that something
// changed ({"canopy": {"sid": [...], "nid": "..."}}, no data), so it tells
// the open pages to fetch their changes and shows a notification. And the
// page opens offline: the app's files and CanopyJS (imported from the
// gateway's /js/) are answered from the network and kept, and from what
// was kept when the network or the gateway fails.

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

const cacheName = "todo-web";

/** The app's own files, and CanopyJS's modules from whichever gateway the page uses. */
function kept(request) {
  if (request.method !== "GET") return false;
  const url = new URL(request.url);
  return url.origin === self.location.origin || url.pathname.startsWith("/js/");
}

self.addEventListener("fetch", (event) => {
  if (!kept(event.request)) return;
  event.respondWith((async () => {
    const cache = await caches.open(cacheName);
    try {
      const response = await fetch(event.request);
      if (response.ok) await cache.put(event.request, response.clone());
      return response;
    } catch (error) {
      const stored = await cache.match(event.request, {ignoreVary: true});
      if (stored) return stored;
      throw error;
    }
  })());
});

self.addEventListener("push", (event) => {
  event.waitUntil((async () => {
    const pages = await self.clients.matchAll({type: "window", includeUncontrolled: true});
    for (const page of pages) page.postMessage({type: "changes"});
    // A push subscribed with userVisibleOnly must show something when no page is in view.
    if (!pages.some((page) => page.visibilityState === "visible")) {
      await self.registration.showNotification("Your to-do lists changed", {body: "Open the app to see what changed.", tag: "todo-changes"});
    }
  })());
});

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  event.waitUntil((async () => {
    const [page] = await self.clients.matchAll({type: "window", includeUncontrolled: true});
    if (page) await page.focus();
    else await self.clients.openWindow("./");
  })());
});
