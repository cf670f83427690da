// Applies the theme and caption size saved on this device (see preferences.js) before the page
// is drawn. A classic script, loaded synchronously in <head>: a module would run after the first
// paint and flash the default theme. Unknown values are harmless: the stylesheet ignores them.
(function applySavedDisplay() {
  var root = document.documentElement;
  var names = ['theme', 'font'];
  for (var i = 0; i < names.length; i += 1) {
    var value = null;
    try {
      value = window.localStorage.getItem('interp.' + names[i]);
    } catch (error) {
      return; // storage blocked (privacy mode, policy): the defaults apply
    }
    if (value && /^[a-z]{1,16}$/.test(value)) root.dataset[names[i]] = value;
  }
})();
