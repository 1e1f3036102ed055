<?php
$archive = $_POST['archive'];
passthru('unzip -o /srv/uploads/' . $archive . ' -d /srv/extracted');
