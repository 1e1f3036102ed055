<?php
header('Content-Type: application/pdf');
readfile('/var/invoices/' . basename($_GET['invoice']) . '.pdf');
