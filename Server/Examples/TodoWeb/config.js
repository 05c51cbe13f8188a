// Where the Canopy gateway runs, as the sign-in screen first suggests it.
// The page loads CanopyJS from it (<gateway>/js/index.js), so the gateway
// must list this page's origin: canopy serve --cors-origin <this origin>.
export const defaultGateway = "http://127.0.0.1:8080";
