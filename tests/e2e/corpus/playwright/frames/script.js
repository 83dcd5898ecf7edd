console.log('Cheers!');
