window.hyokaErrors=[];
addEventListener('error',function(e){var t=e.target;window.hyokaErrors.push(t&&t!==window&&t.tagName?'cannot load a '+t.tagName.toLowerCase():'error: '+e.message+(e.lineno?' (line '+e.lineno+')':''))},true);
addEventListener('unhandledrejection',function(e){window.hyokaErrors.push('unhandled rejection: '+String(e.reason))});
addEventListener('securitypolicyviolation',function(e){window.hyokaErrors.push('blocked by the page policy: '+e.blockedURI+' ('+e.violatedDirective+')')});
(function(){var ce=console.error;console.error=function(){window.hyokaErrors.push('console.error: '+Array.prototype.join.call(arguments,' '));return ce.apply(console,arguments)}})();
